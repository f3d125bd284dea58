"""The reads of `run-matrix history`: compiled from SQLAlchemy Core, executed through the DB-API
driver on SQLite and on a real PostgreSQL, at the store's schema version or after migrating it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa

from runner.errors import EnvironmentProblem
from runner.results.history import query, reads, schema
from runner.results.history.location import Location, parse
from runner.results.history.reads import Reader
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import Gate, Sample

COMPILED = Path(reads.__file__).with_name("compiled_reads.json")


def test_the_compiled_reads_are_what_sqlalchemy_compiles_today(request):
    text = query.compiled_json()
    if request.config.getoption("--update-golden"):
        COMPILED.write_text(text)
    assert COMPILED.read_text() == text, f"{COMPILED} is stale: review, then pytest --update-golden"


@pytest.fixture
def location(history_url: str) -> Location:
    """nv/a: a passed run with a gate on m, then one with m only sampled; rocm/b: one run."""
    where = parse(history_url, "--history", from_command_line=True)
    store = Store.open(where)
    identity = Identity("nv/a", "m/x.yaml", "abc", "h200", "", "0.1.0")
    series = {"m": [Sample("step", 0, 0.5), Sample("step", 1, 1.0)], "n": [Sample("perf", 0, 5.0)]}
    gate = Gate("m", -1, 1, 1.0, 1.1, 0.9, 1.2, 3, "pass", True, "")
    store.record(AttemptRecord(identity, 1, "j", "succeeded", "passed", True, "", series, [gate]))
    store.record(AttemptRecord(identity, 2, "j", "failed", "failed", False, "failed", {"m": series["m"][:1]}))
    other = Identity("rocm/b", "m/y.yaml", "def", "mi355x", "", "0.1.0")
    store.record(
        AttemptRecord(other, 1, "j", "succeeded", "passed", True, "", {"n": [Sample("perf", 3, 7.0)]})
    )
    store.close()
    return where


def test_cells_metrics_and_points_read_back_what_the_store_wrote(location):
    reader = Reader.open(location)
    try:
        assert reads.cells(reader) == ["nv/a", "rocm/b"]
        assert reads.metrics(reader, "nv/a") == ["m", "n"]
        metric, (first, second) = reads.points(reader, "nv/a", None, 20)
        assert metric == "m"  # the gated metric
        assert (first.value, first.at_step, first.reference, first.low, first.high, first.verdict) == (
            1.0, 1, 1.1, 0.9, 1.2, "pass",
        )  # fmt: skip
        assert (second.value, second.at_step, second.verdict, second.trusted, second.note) == (
            0.5, 0, "", False, "failed",
        )  # fmt: skip
        assert first.trusted is True and first.recorded_at <= second.recorded_at
        without_n = replace(second, value=None, at_step=None)
        assert reads.points(reader, "nv/a", "n", 1) == ("n", [without_n])  # the last run only; no n in it
        assert reads.points(reader, "rocm/b", None, 5)[0] == "n"  # nothing gated: its first metric
    finally:
        reader.close()


def test_an_older_store_and_a_newer_one_are_refused_and_left_as_they_are(location):
    """A read never migrates: the next recording `run` does."""
    store = Store.open(location)
    with store.writing() as connection:  # a version 2 store
        connection.execute(sa.text("DROP TABLE rm_last_values"))
        connection.execute(sa.text("ALTER TABLE rm_runs DROP COLUMN launch_run_id"))
        connection.execute(sa.text("ALTER TABLE rm_runs DROP COLUMN stack"))
        connection.execute(sa.update(schema.schema_table).values(version=2))
    store.close()
    with pytest.raises(
        EnvironmentProblem,
        match=rf"has schema version 2 and this run-matrix reads version {schema.VERSION}; a read",
    ):
        Reader.open(location)
    store = Store.open(location)  # as `run` opens it: migrated
    with store.engine.connect() as connection:
        assert connection.execute(sa.select(schema.schema_table.c.version)).scalar() == schema.VERSION
        assert {"launch_run_id", "stack"} <= {
            c["name"] for c in sa.inspect(connection).get_columns("rm_runs")
        }
    store = Store.open(location)
    with store.writing() as connection:
        connection.execute(sa.update(schema.schema_table).values(version=schema.VERSION + 1))
    store.close()
    with pytest.raises(
        EnvironmentProblem, match=rf"has schema version {schema.VERSION + 1}, written by a newer run-matrix"
    ):
        Reader.open(location)


def test_a_file_that_is_no_database_is_an_environment_problem(tmp_path):
    path = tmp_path / "history.sqlite"
    path.write_text("not a database, just text " * 100)
    with pytest.raises(EnvironmentProblem, match=r"history.sqlite cannot be opened: file is not a database$"):
        Reader.open(parse(str(path), "--history", from_command_line=True))


def test_an_unreachable_server_is_an_environment_problem():
    location = parse("postgresql://someone@127.0.0.1:9/db", "--history", from_command_line=True)
    with pytest.raises(
        EnvironmentProblem,
        match=r"^history store postgresql\+psycopg://someone@127.0.0.1:9/db cannot be opened: ",
    ):
        Reader.open(location)


@pytest.mark.allow_subprocess
def test_history_of_a_cell_answers_without_importing_sqlalchemy(location):
    """Its 300 ms budget as a fresh process: SQLAlchemy's import alone would take half of it."""
    probe = (
        "import sys, contextlib, io\nfrom runner.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(sys.argv[1:])\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'pydantic', 'ray'}))"
    )
    env = {**os.environ, "RUN_MATRIX_HISTORY_URL": location.url}  # where a password may be
    argv = [sys.executable, "-c", probe, "history", "nv/a", "--no-plot"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.stdout == "0 []\n", done.stderr


def test_a_refused_password_is_exit_3_and_never_shown(history_url):
    if not history_url.startswith("postgresql://"):
        pytest.skip("a PostgreSQL server's authentication")
    server = history_url.split("@", 1)[1]
    location = parse(
        f"postgresql://nobody:s3cret-pw@{server}", "$RUN_MATRIX_HISTORY_URL", from_command_line=False
    )
    with pytest.raises(EnvironmentProblem) as caught:
        Reader.open(location)
    assert str(caught.value).startswith("history store postgresql+psycopg://nobody:***@")
    assert "cannot be opened: " in str(caught.value) and "s3cret-pw" not in str(caught.value)
