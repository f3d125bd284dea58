"""What ``run-matrix history`` reads: the runs of some cells and one metric's points over them.

The statements are ``runner.results.history.query.reads()``, compiled by SQLAlchemy into
``compiled_reads.json``; they run here through the DB-API driver (sqlite3, psycopg), so that a
fresh ``history`` process does not pay SQLAlchemy's import. A store at another schema version
than those statements read is opened through ``Store`` first, which migrates it or refuses it.
"""

from __future__ import annotations

import datetime
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import EnvironmentProblem, UsageError
from runner.memos import remember
from runner.results.history import checks
from runner.results.history.gates import LAST
from runner.results.history.location import Location, libpq_parameters, redacted

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
    launch_run_id: str = ""  # the name its flags' $${run-id} got; "" when no flag names the run
    stack: str = ""  # the software stack it ran on; "" when unknown
    bisection: str = ""  # the bisection it was an attempt of; "" for a run's

    def to_json(self) -> dict[str, object]:
        data = dict(self.__dict__)
        data["recorded_at"] = self.recorded_at.isoformat(timespec="seconds")
        return data


class Reader:
    """A read-only session on the store: ``rows(NAME, **parameters)`` runs the compiled read NAME.

    It never writes: a SQLite file is opened read-only, and a store that does not exist yet (an empty
    file, a PostgreSQL database without ``rm_`` tables) reads as one without runs."""

    def __init__(self, connection: Any, dialect: str, location: Location) -> None:
        self._connection = connection  # None: the store holds nothing yet
        self._errors = _driver_errors(dialect)
        self._sql: dict[str, tuple[str, dict[str, Any]]] = _compiled()["sql"][dialect]
        self.dialect = dialect
        self.location = location

    @property
    def empty(self) -> bool:
        return self._connection is None

    @classmethod
    def open(cls, location: Location) -> Reader:
        """Connect and check that the store is one this run-matrix reads (exit 3 when it cannot be
        opened, is not a run-matrix store, or is at another schema version); nothing is written."""
        if location.sqlite_file is not None and _sqlite_file_size(location) == 0:
            return cls(None, "sqlite", location)
        reader = cls._connect(location)
        try:
            if not checks.tables_of_a_store(reader, _compiled()["version"], _compiled()["columns"]):
                reader.close()
                return cls(None, reader.dialect, location)
        except BaseException:
            reader.close()
            raise
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
                    read_only_uri(location.sqlite_file),
                    timeout=_BUSY_TIMEOUT_S,
                    isolation_level=None,
                    uri=True,
                )
                try:
                    connection.execute("PRAGMA query_only = ON")
                    connection.execute("SELECT count(*) FROM sqlite_master")  # is it a database at all
                except errors:
                    connection.close()
                    raise
            else:
                import psycopg

                conninfo = psycopg.conninfo.make_conninfo(**libpq_parameters(location))
                connection = psycopg.connect(conninfo, autocommit=True)
        except errors as exc:
            raise EnvironmentProblem(
                f"history store {location.shown} cannot be opened: {_reason(exc)}"
            ) from None
        return cls(connection, dialect, location)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    def rows(self, name: str, **parameters: Any) -> list[dict[str, Any]]:
        sql, constants = self._sql[name]
        return self.execute(sql, {**constants, **parameters})

    def execute(
        self, sql: str, parameters: dict[str, Any] | tuple[Any, ...] | None = None
    ) -> list[dict[str, Any]]:
        if self._connection is None:
            return []
        with self._failing_as_environment():
            cursor = self._connection.cursor()
            try:
                # no parameters: psycopg then reads no placeholders in it (a LIKE 'rm\_%')
                cursor.execute(sql) if parameters is None else cursor.execute(sql, parameters)
                columns = [column[0] for column in cursor.description]
                return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
            finally:
                cursor.close()

    @contextmanager
    def _failing_as_environment(self) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            raise EnvironmentProblem(f"history store {self.location.shown}: {_reason(exc)}") from None


def read_only_uri(path: Path) -> str:
    """SQLite's URI of ``path`` opened read-only: a read neither creates the file nor writes to it."""
    return f"{path.absolute().as_uri()}?mode=ro"


def _sqlite_file_size(location: Location) -> int:
    """The SQLite file's size; anything but a regular file is refused before it is opened (a FIFO
    or a device would block the read, or never end)."""
    assert location.sqlite_file is not None
    try:
        found = os.stat(location.sqlite_file)
    except FileNotFoundError:
        raise UsageError(
            f"no history store at {location.shown}: `run-matrix run` writes one (or give --history)"
        ) from None
    except OSError as exc:
        raise EnvironmentProblem(f"history store {location.shown} cannot be opened: {exc.strerror}") from None
    if not stat.S_ISREG(found.st_mode):
        raise EnvironmentProblem(f"{location.shown} is {_file_kind(found.st_mode)}, not a history store")
    return found.st_size


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((kind for test, kind in kinds if test(mode)), "not a regular file")


def cells(reader: Reader) -> list[str]:
    where = reader.location.shown
    return [checks.Row(row, where, "a run").text("cell") for row in reader.rows("cells")]


def metrics(reader: Reader, cell: str) -> list[str]:
    where = reader.location.shown
    return [checks.Row(row, where, "a sample").text("metric") for row in reader.rows("metrics", cell=cell)]


def points(reader: Reader, cell: str, metric: str | None, last: int) -> tuple[str | None, list[Point]]:
    """The last ``last`` runs of ``cell``, oldest first, with ``metric`` (default: the first gated
    metric of its newest run, else its first metric); and the metric chosen."""
    where, named = reader.location.shown, checks.printable(cell)
    chosen = {"cell": cell, "last": last}
    found = [checks.Row(row, where, f"a run of {named}") for row in reversed(reader.rows("runs", **chosen))]
    metric = metric or _default_metric(reader, chosen)
    values: dict[int, checks.Row] = {}
    gates: dict[int, checks.Row] = {}
    if metric:
        series = f"{named}'s {checks.printable(metric)}"
        for row in reader.rows("last_values", **chosen, metric=metric):
            sample = checks.Row(row, where, f"a sample of {series}")
            values[sample.integer("run")] = sample
        rows = reader.rows("gates", **chosen, metric=metric)
        gates = _gates([checks.Row(row, where, f"a gate of {series}") for row in rows])
    return metric, [
        _point(run, values.get(run.integer("seq")), gates.get(run.integer("seq"))) for run in found
    ]


def _default_metric(reader: Reader, chosen: dict[str, Any]) -> str | None:
    for read in ("gated_metric", "sampled_metric"):
        found = reader.rows(read, **chosen)
        if found:
            return checks.Row(found[0], reader.location.shown, "a metric").text("metric")
    return None


def _gates(rows: list[checks.Row]) -> dict[int, checks.Row]:
    """Per run, the gate of the metric to draw: its last-value coordinate, else its latest step."""
    chosen: dict[int, checks.Row] = {}
    for row in rows:  # by run, then step: LAST (-1) comes first
        previous = chosen.get(row.integer("run"))
        if previous is None or previous.integer("step") != LAST:
            chosen[row.integer("run")] = row
    return chosen


def _point(run: checks.Row, sample: checks.Row | None, gate: checks.Row | None) -> Point:
    value, at = (sample.real("value"), sample.integer("step")) if sample else (None, None)
    if gate is not None:  # the judged coordinate, with its corridor
        value, at = gate.real("value"), gate.optional_integer("at_step")
    return Point(
        run.text("id"), run.time("recorded_at"), run.text("cell"), run.text("content_hash"),
        run.text("hardware"), run.text("miles_commit"), run.integer("attempt"), run.text("status"),
        run.flag("trusted"), run.text("note"), value, at,
        gate.real("reference") if gate else None, gate.real("low") if gate else None,
        gate.real("high") if gate else None, gate.text("verdict") if gate else "", run.text("launch_run_id"),
        run.text("stack"), run.text("bisection"),
    )  # fmt: skip


@remember("shipped", "compiled_reads.json, beside this module")
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


def _reason(exc: Exception) -> str:
    """The driver's message on one line, without a password should it quote a URL or libpq's
    connection string."""
    return redacted(" ".join(str(exc).split()))
