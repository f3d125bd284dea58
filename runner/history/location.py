"""Where the history store is: ``--history``, else ``$RUN_MATRIX_HISTORY_URL``, else a SQLite file.

A path (or ``sqlite:///path``) is an embedded SQLite file; ``postgresql://user@host/db`` a
PostgreSQL server, reached through psycopg 3. Credentials come from the environment only:
``$RUN_MATRIX_HISTORY_URL`` may carry a password, a command line may not (it would show in
``ps`` and in CI logs) — libpq's ``PGPASSWORD`` and ``~/.pgpass`` serve it instead. What is shown
to people hides the password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.errors import UsageError

ENV = "RUN_MATRIX_HISTORY_URL"
DEFAULT_FILE = "history.sqlite"
_POSTGRES = ("postgresql://", "postgres://", "postgresql+psycopg://")


@dataclass(frozen=True)
class Location:
    url: str  # what SQLAlchemy opens (may hold a password from the environment: never print it)
    shown: str  # what people see
    sqlite_file: Path | None = None  # the file, for SQLite


def locate(option: str | None, environ: Mapping[str, str], default_dir: Path) -> Location:
    """The store ``--history`` (else the environment, else ``default_dir/history.sqlite``) names."""
    if option:
        return parse(option, "--history", from_command_line=True)
    if environ.get(ENV):
        return parse(environ[ENV], f"${ENV}", from_command_line=False)
    return _sqlite(default_dir / DEFAULT_FILE)


def parse(text: str, source: str, *, from_command_line: bool) -> Location:
    if text.startswith(_POSTGRES):
        return _postgres(text, source, from_command_line)
    if text.startswith("sqlite:///"):
        return _sqlite(Path(text.removeprefix("sqlite:///")))
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise UsageError(f"{source}: {scheme}:// is not a history store; give a path or postgresql://...")
    return _sqlite(Path(text))


def _sqlite(path: Path) -> Location:
    return Location(f"sqlite:///{path}", str(path), path)


def _postgres(text: str, source: str, from_command_line: bool) -> Location:
    # parsed with the standard library: `history` reads PostgreSQL without importing SQLAlchemy
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    try:
        parts.port  # noqa: B018 (it validates the port)
    except ValueError:
        raise UsageError(f"{source}: not a database URL (postgresql://USER@HOST[:PORT]/DATABASE)") from None
    rest = text.split("://", 1)[1]
    shown = rest
    if parts.password is not None:
        if from_command_line:
            raise UsageError(
                f"{source}: the URL holds a password; keep it off the command line: set PGPASSWORD (or "
                f"~/.pgpass), or put the whole URL in ${ENV}"
            )
        user = parts.netloc.rpartition("@")[0].split(":", 1)[0]
        shown = f"{user}:***@{parts.netloc.rpartition('@')[2]}{rest[len(parts.netloc) :]}"
    return Location(f"postgresql+psycopg://{rest}", f"postgresql+psycopg://{shown}")
