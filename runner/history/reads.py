"""What ``run-matrix history`` reads: the runs of some cells and one metric's points over them.

The statements are ``runner.history.query.reads()``, compiled by SQLAlchemy into
``compiled_reads.json``; they run here through the DB-API driver (sqlite3, psycopg), so that a
fresh ``history`` process does not pay SQLAlchemy's import. A store at another schema version
than those statements read is opened through ``Store`` first, which migrates it or refuses it.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import EnvironmentProblem
from runner.history.gates import LAST
from runner.history.location import Location

_COMPILED = Path(__file__).with_name("compiled_reads.json")
_BUSY_TIMEOUT_S = 60.0  # as the store's: a run writing the file holds its lock this long at most


@dataclass(frozen=True)
class Point:
    """One run of one cell, and what it says of one metric."""

    run: str
    recorded_at: datetime.datetime
    cell: str
    content_hash: str
    hardware: str
    miles_commit: str
    attempt: int
    status: str
    trusted: bool
    note: str
    value: float | None = None  # the metric's last value (or the judged coordinate's, when gated)
    at_step: int | None = None
    reference: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str = ""  # the gate's; "" when the metric was not gated

    def to_json(self) -> dict[str, object]:
        data = dict(self.__dict__)
        data["recorded_at"] = self.recorded_at.isoformat(timespec="seconds")
        return data


class Reader:
    """A read-only session on the store: ``rows(NAME, **parameters)`` runs the compiled read NAME."""

    def __init__(self, connection: Any, dialect: str, location: Location) -> None:
        self._connection = connection
        self._errors = _driver_errors(dialect)
        self._sql: dict[str, tuple[str, dict[str, Any]]] = _compiled()["sql"][dialect]
        self.location = location

    @classmethod
    def open(cls, location: Location) -> Reader:
        """Connect; a store of another schema version goes through ``Store.open`` first (exit 3
        when it cannot be opened or is newer than this run-matrix)."""
        reader = cls._connect(location)
        if reader._version() != _compiled()["version"]:
            reader.close()
            from runner.history.store import Store

            Store.open(location).close()
            reader = cls._connect(location)
        return reader

    @classmethod
    def _connect(cls, location: Location) -> Reader:
        dialect = "sqlite" if location.sqlite_file is not None else "postgresql"
        errors = _driver_errors(dialect)
        connection: Any
        try:
            if location.sqlite_file is not None:
                import sqlite3

                connection = sqlite3.connect(
                    location.sqlite_file, timeout=_BUSY_TIMEOUT_S, isolation_level=None
                )
            else:
                import psycopg

                # libpq reads the URL (SQLAlchemy's driver name aside), PGPASSWORD and ~/.pgpass
                url = location.url.replace("postgresql+psycopg://", "postgresql://", 1)
                connection = psycopg.connect(url, autocommit=True)
        except errors as exc:
            raise EnvironmentProblem(
                f"history store {location.shown} cannot be opened: {_reason(exc, location)}"
            ) from None
        return cls(connection, dialect, location)

    def close(self) -> None:
        self._connection.close()

    def rows(self, name: str, **parameters: Any) -> list[dict[str, Any]]:
        sql, constants = self._sql[name]
        with self._failing_as_environment():
            cursor = self._connection.cursor()
            try:
                cursor.execute(sql, {**constants, **parameters})
                columns = [column[0] for column in cursor.description]
                return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
            finally:
                cursor.close()

    def _version(self) -> int:
        """The store's schema version; 0 when it has none (a read of ``rm_schema`` failed)."""
        try:
            (row,) = self.rows("version")
        except EnvironmentProblem:
            return 0
        return int(next(iter(row.values())) or 0)

    @contextmanager
    def _failing_as_environment(self) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            raise EnvironmentProblem(
                f"history store {self.location.shown}: {_reason(exc, self.location)}"
            ) from None


def cells(reader: Reader) -> list[str]:
    return [row["cell"] for row in reader.rows("cells")]


def metrics(reader: Reader, cell: str) -> list[str]:
    return [row["metric"] for row in reader.rows("metrics", cell=cell)]


def points(reader: Reader, cell: str, metric: str | None, last: int) -> tuple[str | None, list[Point]]:
    """The last ``last`` runs of ``cell``, oldest first, with ``metric`` (default: the first gated
    metric of its newest run, else its first metric); and the metric chosen."""
    chosen = {"cell": cell, "last": last}
    found = list(reversed(reader.rows("runs", **chosen)))
    metric = metric or _default_metric(reader, chosen)
    values, gates = {}, {}
    if metric:
        values = {row["run"]: row for row in reader.rows("last_values", **chosen, metric=metric)}
        gates = _gates(reader.rows("gates", **chosen, metric=metric))
    return metric, [_point(row, values.get(row["seq"]), gates.get(row["seq"])) for row in found]


def _default_metric(reader: Reader, chosen: dict[str, Any]) -> str | None:
    for read in ("gated_metric", "sampled_metric"):
        found = reader.rows(read, **chosen)
        if found:
            return str(found[0]["metric"])
    return None


def _gates(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per run, the gate of the metric to draw: its last-value coordinate, else its latest step."""
    chosen: dict[int, dict[str, Any]] = {}
    for row in rows:  # by run, then step: LAST (-1) comes first
        previous = chosen.get(row["run"])
        if previous is None or previous["step"] != LAST:
            chosen[row["run"]] = row
    return chosen


def _point(run: dict[str, Any], sample: dict[str, Any] | None, gate: dict[str, Any] | None) -> Point:
    value, at = (sample["value"], sample["step"]) if sample else (None, None)
    if gate is not None:  # the judged coordinate, with its corridor
        value, at = gate["value"], gate["at_step"]
    return Point(
        run["id"], _time(run["recorded_at"]), run["cell"], run["content_hash"], run["hardware"],
        run["miles_commit"], run["attempt"], run["status"], bool(run["trusted"]), run["note"], value, at,
        gate["reference"] if gate else None, gate["low"] if gate else None,
        gate["high"] if gate else None, gate["verdict"] if gate else "",
    )  # fmt: skip


def _time(stored: datetime.datetime | str) -> datetime.datetime:
    """psycopg gives a datetime; SQLite holds the text SQLAlchemy wrote (``2026-12-01 04:10:00.123456``)."""
    return stored if isinstance(stored, datetime.datetime) else datetime.datetime.fromisoformat(stored)


@functools.lru_cache(maxsize=1)
def _compiled() -> dict[str, Any]:
    compiled: dict[str, Any] = json.loads(_COMPILED.read_text(encoding="utf-8"))
    return compiled


def _driver_errors(dialect: str) -> tuple[type[Exception], ...]:
    if dialect == "sqlite":
        import sqlite3

        return (sqlite3.Error,)
    try:
        import psycopg
    except ImportError:
        raise EnvironmentProblem(
            "psycopg is not installed; a PostgreSQL history store needs the history extra: "
            "pip install 'run-matrix[history]'"
        ) from None
    return (psycopg.Error,)


def _reason(exc: Exception, location: Location) -> str:
    """The driver's message on one line, without the password should libpq echo the URL."""
    from urllib.parse import urlsplit

    reason = " ".join(str(exc).split())
    password = urlsplit(location.url).password if location.sqlite_file is None else None
    return reason.replace(password, "***") if password else reason
