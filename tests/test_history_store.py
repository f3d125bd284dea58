"""The history store on SQLite and on a real PostgreSQL: records, baselines, trust, schema, concurrency."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from runner.errors import EnvironmentProblem, UsageError
from runner.results.history import schema
from runner.results.history.gates import LAST, Reference
from runner.results.history.location import locate, parse
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import Sample
from schemas.run import Baseline

IDENTITY = Identity("nv/glm5", "m/nv/glm5.yaml", "abc123", "h200", "31f1ca96", "0.1.0")


def record(
    store: Store, value: float, *, trusted: bool = True, identity: Identity = IDENTITY, steps: int = 2
) -> str:
    series = {
        "m": [Sample("step", k, value + k) for k in range(steps)],
        "n": [Sample("perf", 0, float("nan"))],
    }
    status = "passed" if trusted else "failed"
    return store.record(AttemptRecord(identity, 1, "job-1", "succeeded", status, trusted, "", series))


@pytest.fixture
def store(history_url: str) -> Store:
    opened = Store.open(parse(history_url, "--history", from_command_line=True))
    yield opened
    opened.close()


def test_the_baseline_is_the_mean_of_the_last_n_trusted_runs_per_coordinate(store):
    for value in (1.0, 2.0, 3.0, 4.0):
        record(store, value)
    record(store, 100.0, trusted=False)
    record(store, 50.0, identity=Identity(**{**IDENTITY.__dict__, "hardware": "mi355x"}))
    found = store.baseline(IDENTITY, Baseline(runs=3), {"m": "all"})
    assert found == {("m", 0): Reference(3.0, 3), ("m", 1): Reference(4.0, 3)}
    assert store.baseline(IDENTITY, Baseline(runs=10), {"m": "last"}) == {("m", LAST): Reference(3.5, 4)}
    across = store.baseline(IDENTITY, Baseline(match=["cell"]), {"m": "last"})
    assert across == {("m", LAST): Reference(13.0, 5)}  # mi355x's run too; never the untrusted one


def test_an_empty_store_has_no_baseline_and_a_non_finite_value_is_never_averaged(store):
    assert store.baseline(IDENTITY, Baseline(), {"m": "last"}) == {}
    record(store, 1.0)
    assert store.baseline(IDENTITY, Baseline(), {"n": "last"}) == {}  # only nan was printed


def test_untrust_takes_a_run_out_of_baselines_with_its_reason_and_trust_puts_it_back(store):
    record(store, 1.0)
    bad = record(store, 9.0)
    assert store.baseline(IDENTITY, Baseline(), {"m": "last"})[("m", LAST)] == Reference(6.0, 2)
    assert store.set_trust(bad, False, "the node had a broken GPU")["trusted"] is True
    assert store.baseline(IDENTITY, Baseline(), {"m": "last"})[("m", LAST)] == Reference(2.0, 1)
    store.set_trust(bad, True, "it was fine after all")
    assert store.baseline(IDENTITY, Baseline(), {"m": "last"})[("m", LAST)] == Reference(6.0, 2)
    with store.engine.connect() as connection:
        events = connection.execute(
            sa.select(schema.trust_events.c.trusted, schema.trust_events.c.reason)
        ).all()
    assert [tuple(e) for e in events] == [
        (False, "the node had a broken GPU"),
        (True, "it was fine after all"),
    ]


def test_trust_refuses_an_unknown_run_and_a_failed_one(store):
    failed = record(store, 1.0, trusted=False)
    with pytest.raises(UsageError, match=r"^no run 'nope' in the history store "):
        store.set_trust("nope", False, "x")
    with pytest.raises(UsageError, match=f"^run {failed} failed; only a passed run can make baselines$"):
        store.set_trust(failed, True, "x")


def test_an_attempt_is_written_whole_or_not_at_all(store):
    broken = {
        "m": [Sample("step", 0, 1.0)],
        None: [Sample("step", 0, 2.0)],
    }  # a metric without a name: refused
    with pytest.raises(EnvironmentProblem, match=r"^history store .*: .*(NOT NULL|not-null)"):
        store.record(AttemptRecord(IDENTITY, 1, "job", "succeeded", "passed", True, "", broken))
    with store.engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(schema.runs)).scalar() == 0


def test_a_schema_from_a_newer_run_matrix_is_refused_and_left_alone(history_url, store):
    with store.writing() as connection:
        connection.execute(sa.update(schema.schema_table).values(version=schema.VERSION + 1))
    location = parse(history_url, "--history", from_command_line=True)
    with pytest.raises(EnvironmentProblem) as caught:
        Store.open(location)
    assert str(caught.value) == (
        f"history store {location.shown} has schema version {schema.VERSION + 1}, written by a newer run-matrix; "
        f"this one knows version {schema.VERSION} and leaves the store as it is: upgrade run-matrix"
    )
    with store.engine.connect() as connection:
        assert connection.execute(sa.select(schema.schema_table.c.version)).scalar() == schema.VERSION + 1


def _write_many(url: str, count: int, value: float) -> None:
    opened = Store.open(parse(url, "--history", from_command_line=True))
    for _ in range(count):
        record(opened, value, steps=20)
    opened.close()


@pytest.mark.allow_subprocess
def test_two_runs_writing_one_store_at_once_lose_nothing(history_url, store):
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(history_url, 40, v)) for v in (1.0, 3.0)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [w.exitcode for w in writers] == [0, 0]
    with store.engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(schema.runs)).scalar() == 80
        assert connection.execute(sa.select(sa.func.count()).select_from(schema.samples)).scalar() == 80 * 21
    assert store.baseline(IDENTITY, Baseline(runs=80), {"m": [0]})[("m", 0)] == Reference(2.0, 80)


def _open_each(folder: Path, rounds: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    for number in range(rounds):
        barrier.wait(60)  # all at once, on a file none has created yet
        Store.open(parse(str(folder / f"h{number}.sqlite"), "--history", from_command_line=True)).close()


@pytest.mark.allow_subprocess
def test_runs_creating_one_sqlite_store_at_once_all_open_it(tmp_path):
    """SQLite answers "database is locked" at once, without waiting, to a switch to WAL mode while
    another connection creates the file (two runs in one second: one failed with exit 3)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(3)
    openers = [context.Process(target=_open_each, args=(tmp_path, 25, barrier)) for _ in range(3)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(120)
    assert [o.exitcode for o in openers] == [0, 0, 0]


def test_a_file_that_is_no_database_cannot_be_opened(tmp_path):
    path = tmp_path / "history.sqlite"
    path.write_text("not a database, just text " * 100)
    with pytest.raises(
        EnvironmentProblem, match=r"history store .*history.sqlite cannot be opened: file is not a database$"
    ):
        Store.open(parse(str(path), "--history", from_command_line=True))
    with pytest.raises(EnvironmentProblem, match=r"is a directory, not a SQLite file$"):
        Store.open(parse(str(tmp_path), "--history", from_command_line=True))


def test_sqlite_runs_in_wal_mode(tmp_path):
    Store.open(parse(str(tmp_path / "h.sqlite"), "--history", from_command_line=True)).close()
    assert sqlite3.connect(tmp_path / "h.sqlite").execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_an_unreachable_server_cannot_be_opened():
    location = parse("postgresql://someone@127.0.0.1:9/db", "--history", from_command_line=True)
    with pytest.raises(
        EnvironmentProblem,
        match=r"^history store postgresql\+psycopg://someone@127.0.0.1:9/db cannot be opened: ",
    ):
        Store.open(location)


def test_a_password_comes_from_the_environment_never_from_the_command_line_and_is_never_shown():
    with pytest.raises(UsageError) as caught:
        locate("postgresql://ci:s3cret@db.example/runs", {}, Path("."))
    assert "s3cret" not in str(caught.value)
    assert str(caught.value).startswith("--history: the URL holds a password; keep it off the command line")
    location = locate(None, {"RUN_MATRIX_HISTORY_URL": "postgresql://ci:s3cret@db.example/runs"}, Path("."))
    assert (location.url, location.shown) == (
        "postgresql+psycopg://ci:s3cret@db.example/runs",
        "postgresql+psycopg://ci:***@db.example/runs",
    )


def test_the_default_store_is_a_sqlite_file_beside_the_log_folders():
    assert locate(None, {}, Path("run-matrix-logs")).sqlite_file == Path("run-matrix-logs/history.sqlite")
    assert locate("sqlite:///x/h.db", {}, Path(".")).sqlite_file == Path("x/h.db")
    with pytest.raises(
        UsageError, match=r"^--history: mysql:// is not a history store; give a path or postgresql://...$"
    ):
        locate("mysql://a/b", {}, Path("."))


def test_each_cell_s_seconds_are_recorded_and_the_last_passed_ones_read_back(store):
    from runner.results.history.query import durations

    for seconds in (10.0, 20.0, 30.0, 40.0, 50.0, 60.0):
        store.record(AttemptRecord(IDENTITY, 1, "j", "succeeded", "passed", True, "", {}, (), seconds))
    store.record(AttemptRecord(IDENTITY, 1, "j", "failed", "failed", False, "failed", {}, (), 999.0))
    store.record(AttemptRecord(IDENTITY, 1, "j", "infra", "passed", False, "retried", {}, (), None))
    other = Identity(**{**IDENTITY.__dict__, "cell": "rocm/glm5"})
    store.record(AttemptRecord(other, 1, "j", "succeeded", "passed", True, "", {}, (), 7.5))
    assert durations(store, ["nv/glm5", "rocm/glm5", "none"], 5) == {
        "nv/glm5": [60.0, 50.0, 40.0, 30.0, 20.0],
        "rocm/glm5": [7.5],
    }


def test_a_version_1_store_gains_the_seconds_column_and_keeps_its_runs(history_url, store):
    record(store, 1.0)
    with store.writing() as connection:  # back to what version 1 wrote
        connection.execute(sa.text("DROP TABLE rm_last_values"))
        connection.execute(sa.text("ALTER TABLE rm_runs DROP COLUMN seconds"))
        connection.execute(sa.update(schema.schema_table).values(version=1))
    store.close()
    reopened = Store.open(parse(history_url, "--history", from_command_line=True))
    with reopened.engine.connect() as connection:
        assert connection.execute(sa.select(schema.schema_table.c.version)).scalar() == schema.VERSION
        assert connection.execute(sa.select(schema.runs.c.cell, schema.runs.c.seconds)).all() == [
            ("nv/glm5", None)
        ]
    reopened.close()


def test_a_version_2_store_gains_the_last_values_of_its_runs_and_judges_as_before(history_url, store):
    for value in (1.0, 2.0, 4.0):
        record(store, value)
    record(store, 100.0, trusted=False)
    before = store.baseline(IDENTITY, Baseline(), {"m": "last", "n": "last"})
    with store.writing() as connection:  # back to what version 2 wrote
        connection.execute(sa.text("DROP TABLE rm_last_values"))
        connection.execute(sa.update(schema.schema_table).values(version=2))
    store.close()
    reopened = Store.open(parse(history_url, "--history", from_command_line=True))
    with reopened.engine.connect() as connection:
        rows = connection.execute(sa.select(schema.last_values).order_by(schema.last_values.c.run)).all()
    assert [(r.metric, r.value) for r in rows] == [
        ("m", 2.0), ("n", None), ("m", 3.0), ("n", None), ("m", 5.0), ("n", None), ("m", 101.0), ("n", None),
    ]  # fmt: skip
    assert reopened.baseline(IDENTITY, Baseline(), {"m": "last", "n": "last"}) == before
    assert before == {("m", LAST): Reference(10 / 3, 3)}
    reopened.close()


def test_the_last_values_and_the_samples_give_one_baseline(store):
    """The default match reads rm_last_values; a match without content hash or hardware reads
    rm_samples: over one history, both give the same means."""
    other = Identity(**{**IDENTITY.__dict__, "hardware": "mi355x"})
    for index, value in enumerate((1.0, 2.0, 3.0, 5.0, 8.0, 13.0)):
        record(store, value, identity=other if index % 3 == 0 else IDENTITY, trusted=index != 4)
    for runs in (1, 2, 3, 10):
        default = store.baseline(IDENTITY, Baseline(runs=runs), {"m": "last"})
        by_commit = store.baseline(
            IDENTITY, Baseline(runs=runs, match=["miles_commit", "hardware"]), {"m": "last"}
        )
        assert default == by_commit != {}


HOLDER = (
    "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
    "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(3); c.execute('COMMIT')"
)


@pytest.mark.allow_subprocess
def test_a_locked_store_says_who_holds_it_within_two_seconds_then_waits(tmp_path, capfd):
    import subprocess
    import sys
    import threading
    import time

    path = tmp_path / "history.sqlite"
    opened = Store.open(parse(str(path), "--history", from_command_line=True))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        said_at: list[float] = []
        said: list[str] = []
        started = time.monotonic()

        def watch() -> None:
            while time.monotonic() - started < 5 and not said_at:
                err = capfd.readouterr().err
                if "waiting for the history store" in err:
                    said_at.append(time.monotonic() - started)
                    said.append(err)
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        record(opened, 1.0)  # waits for the holder, then writes
        watcher.join()
        assert said_at and said_at[0] < 2.0
        assert said[0].startswith(f"run-matrix: waiting for the history store (locked by pid {holder.pid}: ")
    finally:
        holder.wait()
        opened.close()
