"""What a read accepts from the store: its tables are run-matrix's, at the version this run-matrix
reads, and each value read is of its column's type. A store is a file anyone may write (or a
shared database): anything else is refused with the store named (exit 3), never a traceback, and
text from it reaches a terminal only through ``printable``.

This module is below ``reads``: it names what it reads through as ``Source`` (which ``reads.Reader``
is), never the reader itself, so that the two do not import each other.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from runner.errors import EnvironmentProblem, counted
from runner.errors import printable as printable  # where the history readers take it from

if TYPE_CHECKING:
    from runner.results.history.location import Location

PREFIX = "rm_"
_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
_SQLITE_COLUMNS = "SELECT name FROM pragma_table_info(?)"
_POSTGRES_COLUMNS = (
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = current_schema() AND table_name LIKE 'rm\\_%'"
)


class Source(Protocol):
    """What the checks read a store through: its place, its SQL dialect and its statements."""

    dialect: str
    location: Location

    def execute(
        self, sql: str, parameters: dict[str, Any] | tuple[Any, ...] | None = None
    ) -> list[dict[str, Any]]: ...


def tables_of_a_store(reader: Source, version: int, expected: Mapping[str, Sequence[str]]) -> bool:
    """True when the store has run-matrix's tables at ``version`` (with ``expected`` columns), False
    when it has none yet (a fresh SQLite file; a PostgreSQL database of other things); anything
    else is refused."""
    found = _columns(reader)
    ours = {name: columns for name, columns in found.items() if name.startswith(PREFIX)}
    if not ours:
        if found:  # a SQLite file of something else
            raise _not_a_store(reader, f"it holds {_listed(found)} and no rm_schema table")
        return False
    if "rm_schema" not in ours:
        raise _not_a_store(reader, f"it holds {_listed(ours)} but no rm_schema table")
    stored = _version(reader, ours["rm_schema"])
    shown = reader.location.shown
    if stored > version:
        raise EnvironmentProblem(
            f"history store {shown} has schema version {stored}, written by a newer run-matrix; this one "
            f"knows version {version} and leaves the store as it is: upgrade run-matrix"
        )
    if stored < version:
        raise EnvironmentProblem(
            f"history store {shown} has schema version {stored} and this run-matrix reads version "
            f"{version}; a read leaves the store as it is: the next `run-matrix run` that records to it "
            "migrates it"
        )
    for table, columns in expected.items():
        if table not in ours:
            raise _not_a_store(reader, f"it has no {table} table")
        missing = [column for column in columns if column not in ours[table]]
        if missing:
            raise _not_a_store(
                reader, f"its {table} table lacks {counted(len(missing), 'column')}: {', '.join(missing)}"
            )
    return True


def _columns(reader: Source) -> dict[str, set[str]]:
    """Every table's column names (SQLite: every table; PostgreSQL: the ``rm_`` ones)."""
    if reader.dialect == "postgresql":
        found: dict[str, set[str]] = {}
        for row in reader.execute(_POSTGRES_COLUMNS):
            found.setdefault(row["table_name"], set()).add(row["column_name"])
        return found
    names = [row["name"] for row in reader.execute(_SQLITE_TABLES)]
    return {name: {row["name"] for row in reader.execute(_SQLITE_COLUMNS, (name,))} for name in names}


def _version(reader: Source, columns: set[str]) -> int:
    if "version" not in columns:
        raise _not_a_store(reader, "its rm_schema table has no version column")
    found = [row["version"] for row in reader.execute("SELECT version FROM rm_schema")]
    if not found:
        raise _not_a_store(reader, "its rm_schema table holds no version")
    versions: list[int] = []
    for value in found:
        if not _is_integer(value) or value < 1:
            raise _not_a_store(reader, f"its rm_schema.version is {shown_value(value)}, not a schema version")
        versions.append(value)
    return max(versions)


def _not_a_store(reader: Source, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"{reader.location.shown} is not a run-matrix history store: {why}")


def _listed(tables: Mapping[str, object], shown: int = 4) -> str:
    names = sorted(tables)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"table{'s' if len(names) > 1 else ''} {', '.join(printable(n) for n in names[:shown])}{more}"


class Row:
    """One row of a read, whose values are checked as they are taken: ``text``, ``integer``...
    A value of another type is an unreadable store (exit 3), naming the row ``what``."""

    def __init__(self, row: Mapping[str, Any], where: str, what: str) -> None:
        self._row, self._where, self._what = row, where, what

    def text(self, key: str) -> str:
        value = self._row[key]
        return value if isinstance(value, str) else self._refuse(key, value, "text")

    def integer(self, key: str) -> int:
        value = self._row[key]
        return int(value) if _is_integer(value) else self._refuse(key, value, "an integer")

    def optional_integer(self, key: str) -> int | None:
        return None if self._row[key] is None else self.integer(key)

    def real(self, key: str) -> float | None:
        value = self._row[key]
        if value is None:
            return None
        return (
            float(value)
            if _is_integer(value) or isinstance(value, float)
            else self._refuse(key, value, "a number")
        )

    def flag(self, key: str) -> bool:
        value = self._row[key]
        return (
            bool(value)
            if (value in (0, 1) and _is_integer(value)) or isinstance(value, bool)
            else (self._refuse(key, value, "true or false"))
        )

    def time(self, key: str) -> datetime.datetime:
        """psycopg gives a datetime; SQLite the text SQLAlchemy wrote (``2026-12-01 04:10:00.123456``)."""
        value = self._row[key]
        if isinstance(value, datetime.datetime):
            return value
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value)
            except ValueError:
                pass
        return self._refuse(key, value, "a time")

    def _refuse(self, key: str, value: object, kind: str) -> NoReturn:
        raise EnvironmentProblem(
            f"history store {self._where}: {self._what} has {key} {shown_value(value)}, not {kind}: "
            "the store is damaged (or was not written by run-matrix)"
        )


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def shown_value(value: object, limit: int = 60) -> str:
    """A stored value in a message: its repr (which escapes control characters), shortened."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
