"""Where the history store is: ``--history``, else ``$RUN_MATRIX_HISTORY_URL``, else a SQLite file.

A path (or ``sqlite:///path``) is an embedded SQLite file; ``postgresql://user@host/db`` a
PostgreSQL server, reached through psycopg 3. Credentials come from the environment only:
``$RUN_MATRIX_HISTORY_URL`` may carry a password, a command line may not (it would show in
``ps`` and in CI logs) — libpq's ``PGPASSWORD`` and ``~/.pgpass`` serve it instead. What is shown
to people hides the password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import EnvironmentProblem, UsageError

if TYPE_CHECKING:
    from urllib.parse import SplitResult

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
    from urllib.parse import parse_qsl, urlsplit

    refused = UsageError if from_command_line else EnvironmentProblem
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (it validates the port)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError as exc:
        # never the exception's text: it may quote the password ("Port could not be cast ... 'pw'")
        unclosed = ": an unclosed [ in its host" if "IPv6" in str(exc) else ""
        raise refused(
            f"{source}: not a database URL{unclosed} (postgresql://USER@HOST[:PORT]/DATABASE)"
        ) from None
    in_query = any(key.lower() == "password" for key, _ in query)
    if from_command_line and (parts.password is not None or in_query):
        raise UsageError(
            f"{source}: the URL holds a password; keep it off the command line: set PGPASSWORD (or "
            f"~/.pgpass), or put the whole URL in ${ENV}"
        )
    rest = text.split("://", 1)[1]
    return Location(f"postgresql+psycopg://{rest}", f"postgresql+psycopg://{_without_password(parts)}")


def _without_password(parts: SplitResult) -> str:
    """The URL after its scheme, with the password of its user part and of its query as ``***``:
    replaced by position in the URL, never by its text (a password ``127`` is in ``127.0.0.1``)."""
    userinfo, at, host = parts.netloc.rpartition("@")
    if parts.password is not None:
        userinfo = f"{userinfo.split(':', 1)[0]}:***"
    query = "&".join(
        f"{piece.partition('=')[0]}=***" if piece.partition("=")[0].lower() == "password" else piece
        for piece in parts.query.split("&")
    )
    return f"{userinfo}{at}{host}{parts.path}{'?' if parts.query else ''}{query}"


def libpq_parameters(location: Location) -> dict[str, str]:
    """What libpq connects with, as keywords: libpq then never parses (nor quotes in an error) the
    URL, which may hold the password."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    parts = urlsplit(location.url)
    named = {
        "host": parts.hostname,
        "port": str(parts.port) if parts.port is not None else None,
        "user": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password is not None else None,
        "dbname": unquote(parts.path.removeprefix("/")) or None,
    }
    parameters = {key: value for key, value in named.items() if value is not None}
    parameters.update(parse_qsl(parts.query, keep_blank_values=True))
    return parameters


_CONNINFO_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)
_URL = re.compile(r"postgres(?:ql)?(?:\+psycopg)?://[^\s\"']*")


def redacted(message: str) -> str:
    """A driver's message without a password: every URL in it loses the password of its user and
    query parts, and every ``password=VALUE`` (libpq's connection string) its value."""
    from urllib.parse import urlsplit

    def url(found: re.Match[str]) -> str:
        scheme = found.group(0).partition("://")[0]
        try:
            return f"{scheme}://{_without_password(urlsplit(found.group(0)))}"
        except ValueError:
            return f"{scheme}://***"

    return _CONNINFO_PASSWORD.sub(r"\1***", _URL.sub(url, message))
