"""The history store: one run row per attempt, its metric series and gate verdicts, in one transaction.

SQLite gets WAL and a busy timeout, and every write transaction takes the write lock at its
start (``BEGIN IMMEDIATE``), so two ``run``s writing one file wait for each other instead of
failing; PostgreSQL serializes schema creation with an advisory lock. A store that cannot be
opened is an environment problem (exit 3), raised before anything runs.
"""

from __future__ import annotations

import datetime
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from runner.errors import EnvironmentProblem, UsageError
from runner.memos import remember
from runner.results.history import locks, schema
from runner.results.history.gates import LAST, Reference, Steps
from runner.results.history.location import Location, redacted
from runner.results.outcome import Gate, Sample

if TYPE_CHECKING:  # `history` reads the store without pydantic's start-up
    from schemas.run import Baseline

_BUSY_TIMEOUT_MS = int(locks.FIRST_WAIT_S * 1000)  # each wait; locks.when_not_locked waits on, and says so
# 64 MiB of pages and 256 MiB mapped: a baseline reads 100 runs' samples from all over the file
_PRAGMAS = (
    *(f"busy_timeout = {_BUSY_TIMEOUT_MS}", "journal_mode = WAL", "foreign_keys = ON"),
    *("cache_size = -65536", "mmap_size = 268435456"),
)
_SCHEMA_LOCK = 0x726D6869  # PostgreSQL advisory lock key ("rmhi")


@dataclass(frozen=True)
class Identity:
    cell: str
    spec: str
    content_hash: str
    hardware: str
    miles_commit: str
    version: str
    stack: str = ""  # the software stack: a band's reference comes from runs of the same one


@dataclass(frozen=True)
class AttemptRecord:
    """What one attempt of one cell leaves in the store."""

    identity: Identity
    attempt: int
    submission_id: str
    outcome: str
    status: str
    trusted: bool
    note: str
    series: Mapping[str, Sequence[Sample]]
    gates: Sequence[Gate] = ()
    seconds: float | None = None  # the cell's wall-clock time, on its last attempt
    launch_run_id: str = ""  # the name its flags' $${run-id} got ("" when no flag names the run)
    bisection: str = ""  # the bisection it was part of ("" for a run's)
    bisect_outcome: str = ""  # what it told the bisection: pass, fail, env (its last attempt only)


class Store:
    def __init__(self, engine: sa.Engine, location: Location) -> None:
        self.engine = engine
        self.location = location

    @classmethod
    def open(cls, location: Location) -> Store:
        """Connect, create or migrate the schema; exit 3 when the store cannot be opened."""
        if location.sqlite_file is not None:
            _sqlite_folder(location)
        engine = _engine(location)
        store = cls(engine, location)
        try:
            with store.writing() as connection:
                if engine.dialect.name == "postgresql":
                    connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_SCHEMA_LOCK)))
                schema.migrate(connection, location.shown)
        except sa.exc.SQLAlchemyError as exc:
            engine.dispose()
            raise EnvironmentProblem(
                f"history store {location.shown} cannot be opened: {_reason(exc)}"
            ) from None
        except EnvironmentProblem:
            engine.dispose()
            raise
        return store

    @classmethod
    def open_existing(cls, location: Location) -> Store | None:
        """The store, to read: nothing is created or migrated (``reads.Reader.open`` checks it
        first, and a SQLite file is opened read-only); None when it holds nothing yet."""
        from runner.results.history.reads import Reader, read_only_uri

        reader = Reader.open(location)
        reader.close()
        if reader.empty:
            return None
        if location.sqlite_file is None:
            return cls(_engine(location), location)
        import sqlite3

        uri, timeout = read_only_uri(location.sqlite_file), locks.BUSY_TIMEOUT_S
        engine = sa.create_engine(
            "sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, timeout=timeout)
        )
        return cls(engine, location)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def writing(self) -> Iterator[sa.Connection]:
        """One write transaction (SQLite: ``BEGIN IMMEDIATE``); rolled back on any error."""
        with self.engine.connect() as connection, connection.execution_options(run_matrix_write=True).begin():
            yield connection

    @contextmanager
    def reading(self) -> Iterator[sa.Connection]:
        with self.failing_as_environment(), self.engine.connect() as connection:
            yield connection

    @contextmanager
    def failing_as_environment(self) -> Iterator[None]:
        """A database that fails mid-run (the server went away, the disk is full) is exit 3."""
        try:
            yield
        except sa.exc.SQLAlchemyError as exc:
            raise EnvironmentProblem(f"history store {self.location.shown}: {_reason(exc)}") from None

    def record(self, record: AttemptRecord) -> str:
        """Write one attempt, its series and its gates in one transaction; its run id."""
        run_id = uuid.uuid4().hex[:12]
        with self.failing_as_environment(), self.writing() as connection:
            seq = connection.execute(sa.insert(schema.runs).values(**_run_row(run_id, record)))
            run = int(seq.inserted_primary_key[0])  # type: ignore[index]
            rows = [row for name, values in record.series.items() for row in _sample_rows(run, name, values)]
            if rows:
                connection.execute(sa.insert(schema.samples), rows)
                connection.execute(sa.insert(schema.last_values), _last_value_rows(run, record))
            if record.gates:
                connection.execute(sa.insert(schema.gates), [_gate_row(run, g) for g in record.gates])
        return run_id

    def baseline(
        self, identity: Identity, baseline: Baseline, steps: Mapping[str, Steps]
    ) -> dict[tuple[str, int], Reference]:
        """The reference of every coordinate of ``steps`` (metric -> its selection), in one query; the
        baseline runs share the ``match`` fields and the software stack (a new stack is a cold start)."""
        last = [name for name, selection in steps.items() if selection == "last"]
        every = [name for name, selection in steps.items() if selection == "all"]
        listed = tuple((name, tuple(s)) for name, s in steps.items() if isinstance(s, list))
        if not (last or every or listed):
            return {}
        match = (*dict.fromkeys(baseline.match), *(() if "stack" in baseline.match else ("stack",)))
        query = _baseline_query(match, len(last), len(every), listed)
        values: dict[str, Any] = {f"match_{key}": getattr(identity, key) for key in match}
        values.update({f"last_{i}": name for i, name in enumerate(last)})
        values.update({f"every_{i}": name for i, name in enumerate(every)})
        values["runs"] = baseline.runs
        with self.reading() as connection:
            rows = connection.execute(query, values).all()
        return {(row[0], int(row[1])): Reference(float(row[2]), int(row[3])) for row in rows if row[3]}

    def set_trust(self, run_id: str, trusted: bool, reason: str) -> dict[str, Any]:
        """Untrust (or trust again) one run, with the reason kept; the run as it was before."""
        runs = schema.runs
        with self.failing_as_environment(), self.writing() as connection:
            row = connection.execute(sa.select(runs).where(runs.c.id == run_id)).mappings().first()
            if row is None:
                raise UsageError(f"no run {run_id!r} in the history store {self.location.shown}")
            if trusted and row["status"] != "passed":
                raise UsageError(f"run {run_id} {row['status']}; only a passed run can make baselines")
            if row["trusted"] != trusted:
                note = "" if trusted else f"untrusted: {reason}"
                connection.execute(
                    sa.update(runs).where(runs.c.seq == row["seq"]).values(trusted=trusted, note=note)
                )
                event = {"run": row["seq"], "at": _now(), "trusted": trusted, "reason": reason}
                connection.execute(sa.insert(schema.trust_events).values(**event))
            return dict(row)


@remember("pure", "a baseline query built once per shape (its values are bound parameters)", maxsize=64)
def _baseline_query(
    match: tuple[str, ...], last: int, every: int, listed: tuple[tuple[str, tuple[int, ...]], ...]
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """Built once per shape (judging 1,000 cells builds it once): the baseline runs are the last
    ``:runs`` trusted runs sharing the ``match`` fields; their coordinates' means and counts. The
    ``last`` and ``every`` metric names are ``:last_0``... and ``:every_0``..., one parameter each
    (not an expanding ``IN``, whose SQL SQLAlchemy would render anew at every execution)."""
    runs, samples = schema.runs, schema.samples
    chosen = (
        sa.select(runs.c.seq)
        .where(runs.c.trusted == sa.true(), *[runs.c[key] == sa.bindparam(f"match_{key}") for key in match])
        .order_by(runs.c.seq.desc())
        .limit(sa.bindparam("runs"))
    )
    parts = []
    if last:
        parts.append(_last_part(chosen, match, [sa.bindparam(f"last_{i}") for i in range(last)]))
    if every or listed:
        wanted: list[sa.ColumnElement[bool]] = []
        if every:
            wanted.append(samples.c.metric.in_([sa.bindparam(f"every_{i}") for i in range(every)]))
        wanted += [sa.and_(samples.c.metric == name, samples.c.step.in_(ks)) for name, ks in listed]
        mean, count = sa.func.avg(samples.c.value), sa.func.count(samples.c.value)
        parts.append(
            sa.select(samples.c.metric, samples.c.step, mean, count)
            .where(samples.c.run.in_(chosen.scalar_subquery()), sa.or_(*wanted))
            .group_by(samples.c.metric, samples.c.step)
        )
    return parts[0] if len(parts) == 1 else sa.union_all(*parts)


def _last_part(
    chosen: sa.Select[Any], match: tuple[str, ...], names: list[sa.BindParameter[Any]]
) -> sa.Select[Any]:
    """The last values' means: when the baseline runs share content hash and hardware (the default),
    from ``rm_last_values``, one range per metric from the oldest baseline run on (``run + 0``
    keeps SQLite from probing it once per run); else from ``rm_samples``, one probe per run."""
    if not {"content_hash", "hardware"} <= set(match):
        samples = schema.samples
        where = (samples.c.run.in_(chosen.scalar_subquery()), samples.c.last == sa.true())
        return _means(samples, names, *where)
    table = schema.last_values
    oldest = sa.select(sa.func.min(chosen.subquery().c.seq)).scalar_subquery()
    return _means(
        table,
        names,
        table.c.content_hash == sa.bindparam("match_content_hash"),
        table.c.hardware == sa.bindparam("match_hardware"),
        table.c.run >= oldest,
        (table.c.run + sa.literal_column("0")).in_(chosen.scalar_subquery()),
    )


def _means(table: sa.Table, names: list[sa.BindParameter[Any]], *where: Any) -> sa.Select[Any]:
    value = table.c.value
    return (
        sa.select(table.c.metric, sa.literal(LAST), sa.func.avg(value), sa.func.count(value))
        .where(table.c.metric.in_(names), *where)
        .group_by(table.c.metric)
    )


def _engine(location: Location) -> sa.Engine:
    if location.sqlite_file is None:
        return sa.create_engine(location.url, pool_pre_ping=True)
    sqlite_file = location.sqlite_file
    engine = sa.create_engine(location.url, connect_args={"timeout": _BUSY_TIMEOUT_MS / 1000})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's begin event below says BEGIN IMMEDIATE
        cursor = dbapi_connection.cursor()
        for pragma in _PRAGMAS:
            locks.when_not_locked(cursor, f"PRAGMA {pragma}", sqlite_file, location.shown)
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        # a write takes the lock first; a read is one SELECT, which SQLite runs as its own snapshot
        if connection.get_execution_options().get("run_matrix_write", False):
            cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
            locks.when_not_locked(cursor, "BEGIN IMMEDIATE", sqlite_file, location.shown)

    return engine


def _sqlite_folder(location: Location) -> None:
    assert location.sqlite_file is not None
    if location.sqlite_file.is_dir():
        raise EnvironmentProblem(f"history store {location.shown} is a directory, not a SQLite file")
    if location.sqlite_file.exists() and not location.sqlite_file.is_file():  # a FIFO would block
        raise EnvironmentProblem(f"history store {location.shown} is not a regular file, not a SQLite file")
    try:
        location.sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(
            f"history store {location.shown} cannot be created: {exc.strerror}"
        ) from None


def _reason(exc: sa.exc.SQLAlchemyError) -> str:
    original = getattr(exc, "orig", None)
    return redacted(" ".join(str(original or exc).split()))


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _run_row(run_id: str, record: AttemptRecord) -> dict[str, Any]:
    identity = record.identity
    return {
        "id": run_id,
        "recorded_at": _now(),
        "cell": identity.cell,
        "spec": identity.spec,
        "content_hash": identity.content_hash,
        "hardware": identity.hardware,
        "miles_commit": identity.miles_commit,
        "version": identity.version,
        "attempt": record.attempt,
        "submission_id": record.submission_id,
        "outcome": record.outcome,
        "status": record.status,
        "trusted": record.trusted,
        "note": record.note,
        "seconds": record.seconds,
        "launch_run_id": record.launch_run_id,
        "stack": identity.stack,
        "bisection": record.bisection,
        "bisect_outcome": record.bisect_outcome,
    }


def _sample_rows(run: int, name: str, values: Sequence[Sample]) -> Iterator[dict[str, Any]]:
    for index, sample in enumerate(values):
        finite = math.isfinite(sample.value)
        yield {
            "run": run,
            "metric": name,
            "kind": sample.kind,
            "step": sample.step,
            "value": sample.value if finite else None,
            "nonfinite": None if finite else str(sample.value),
            "last": index == len(values) - 1,
        }


def _last_value_rows(run: int, record: AttemptRecord) -> list[dict[str, Any]]:
    identity, rows = record.identity, []
    for name, values in record.series.items():
        if values:
            value = values[-1].value
            rows.append(
                {
                    "content_hash": identity.content_hash,
                    "hardware": identity.hardware,
                    "metric": name,
                    "run": run,
                    "value": value if math.isfinite(value) else None,
                }
            )
    return rows


def _gate_row(run: int, gate: Gate) -> dict[str, Any]:
    return {
        "run": run,
        "metric": gate.metric,
        "step": gate.step,
        "at_step": gate.at_step,
        "value": gate.value,
        "reference": gate.reference,
        "low": gate.low,
        "high": gate.high,
        "baseline_runs": gate.baseline_runs,
        "verdict": gate.verdict,
        "enforce": gate.enforce,
    }
