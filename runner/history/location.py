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
    import sqlalchemy as sa

    try:
        url = sa.make_url(text)
    except sa.exc.ArgumentError:
        raise UsageError(f"{source}: not a database URL (postgresql://USER@HOST[:PORT]/DATABASE)") from None
    if url.password is not None and from_command_line:
        raise UsageError(
            f"{source}: the URL holds a password; keep it off the command line: set PGPASSWORD (or "
            f"~/.pgpass), or put the whole URL in ${ENV}"
        )
    url = url.set(drivername="postgresql+psycopg")
    return Location(url.render_as_string(hide_password=False), url.render_as_string(hide_password=True))
