"""Hostile history stores and URLs: a read never creates, migrates or writes a store; a file that
is not run-matrix's, a damaged value, a FIFO and a bad URL are clear errors naming the store; a
password is never printed; text from the store never reaches the terminal raw. Real SQLite files."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from runner.ci.estimate import recorded
from runner.errors import EnvironmentProblem, UsageError
from runner.results.history import schema
from runner.results.history.location import locate, parse, redacted
from runner.results.history.reads import Reader
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import Gate, Sample

ENV = "RUN_MATRIX_HISTORY_URL"


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sql(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        connection.execute(statement)
    connection.close()


def tables(path: Path) -> list[str]:
    connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    found = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    connection.close()
    return sorted(found)


def a_store(path: Path, cell: str = "nv/a") -> Path:
    store = Store.open(parse(str(path), "--history", from_command_line=True))
    identity = Identity(cell, "m/x.yaml", "abc", "h200", "", "0.1.0")
    series = {"m": [Sample("step", 0, 0.5), Sample("step", 1, 1.0)]}
    gate = Gate("m", -1, 1, 1.0, 1.1, 0.9, 1.2, 3, "pass", True, "")
    store.record(AttemptRecord(identity, 1, "j", "succeeded", "passed", True, "", series, [gate], 12.0))
    store.close()
    return path


def test_a_foreign_sqlite_file_is_refused_by_every_read_and_left_untouched(cli, tmp_path):
    other = tmp_path / "other.sqlite"
    sql(other, "CREATE TABLE t(x)", "INSERT INTO t VALUES (1)")
    before = digest(other)
    shown = cli("history", "--history", str(other))
    assert (shown.code, shown.out, shown.err) == (
        3, "", f"run-matrix: {other} is not a run-matrix history store: it holds table t and no rm_schema table\n",
    )  # fmt: skip
    for trust in (["untrust", "abc", "--reason", "r"], ["trust", "abc", "--reason", "r"]):
        assert cli("history", *trust, "--history", str(other)).code == 3
    with pytest.raises(EnvironmentProblem, match="is not a run-matrix history store"):
        recorded(str(other), {}, ["nv/a"])  # what `ci plan --history` and `list --history` read
    assert digest(other) == before and tables(other) == ["t"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]  # no -wal, no -journal left


@pytest.mark.parametrize(
    ("statements", "why"),
    [
        (["CREATE TABLE rm_runs(x)"], "it holds table rm_runs but no rm_schema table"),
        (["CREATE TABLE rm_schema(v)", "INSERT INTO rm_schema VALUES (3)"], "its rm_schema table has no version column"),
        (["CREATE TABLE rm_schema(version)"], "its rm_schema table holds no version"),
        (["CREATE TABLE rm_schema(version)", "INSERT INTO rm_schema VALUES ('abc')"], "its rm_schema.version is 'abc', not a schema version"),
        (["CREATE TABLE rm_schema(version)", "INSERT INTO rm_schema VALUES (-5)"], "its rm_schema.version is -5, not a schema version"),
        (["CREATE TABLE rm_schema(version)", f"INSERT INTO rm_schema VALUES ({schema.VERSION})", "CREATE TABLE rm_runs(x)"], "it has no rm_bisections table"),
    ],
)  # fmt: skip
def test_foreign_rm_tables_are_not_a_store(cli, tmp_path, statements, why):
    path = tmp_path / "h.sqlite"
    sql(path, *statements)
    before = digest(path)
    shown = cli("history", "--history", str(path))
    assert (shown.code, shown.err) == (3, f"run-matrix: {path} is not a run-matrix history store: {why}\n")
    assert digest(path) == before


def test_rm_tables_with_other_columns_are_not_a_store(cli, tmp_path):
    path = a_store(tmp_path / "h.sqlite")
    sql(path, "DROP TABLE rm_gates", "CREATE TABLE rm_gates(run, metric)")
    shown = cli("history", "--history", str(path))
    assert shown.code == 3
    assert shown.err.startswith(
        f"run-matrix: {path} is not a run-matrix history store: its rm_gates table lacks "
    )


def test_a_store_s_damaged_schema_version_is_refused_not_migrated_by_a_read(cli, tmp_path):
    path = a_store(tmp_path / "h.sqlite")
    for version, why in (("'abc'", "'abc'"), ("-5", "-5")):
        sql(path, "DELETE FROM rm_schema", f"INSERT INTO rm_schema VALUES ({version})")
        before = digest(path)
        shown = cli("history", "--history", str(path))
        assert (shown.code, shown.err) == (
            3, f"run-matrix: {path} is not a run-matrix history store: its rm_schema.version is {why}, not a schema version\n",
        )  # fmt: skip
        assert digest(path) == before
    sql(path, "DELETE FROM rm_schema")
    shown = cli("history", "--history", str(path))
    assert shown.err.endswith("its rm_schema table holds no version\n") and shown.code == 3


def test_an_empty_file_and_a_missing_one_read_as_no_runs_and_stay_as_they_are(cli, tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    shown = cli("history", "--history", str(empty))
    assert (shown.code, shown.out, shown.err) == (0, f"no runs recorded yet in the history store {empty}\n", "")
    shown = cli("history", "--history", str(empty), "--format", "json")
    assert (shown.code, json.loads(shown.out)) == (0, {"cells": []})
    assert cli("history", "untrust", "abc", "--reason", "r", "--history", str(empty)).code == 2
    assert recorded(str(empty), {}, ["nv/a"]) == {}
    assert empty.stat().st_size == 0
    missing = tmp_path / "missing.sqlite"
    shown = cli("history", "--history", str(missing))
    assert (shown.code, shown.err) == (
        2, f"run-matrix: no history store at {missing}: `run-matrix run` writes one (or give --history)\n",
    )  # fmt: skip
    assert not missing.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]


def test_a_store_is_read_as_it_is_and_only_a_run_migrates_it(cli, tmp_path):
    path = a_store(tmp_path / "h.sqlite")
    assert recorded(str(path), {}, ["nv/a"]) == {"nv/a": [12.0]}
    sql(path, "DROP TABLE rm_last_values", "UPDATE rm_schema SET version = 2")
    before = digest(path)
    shown = cli("history", "--history", str(path))
    assert shown.code == 3 and f"has schema version 2 and this run-matrix reads version {schema.VERSION}" in shown.err
    with pytest.raises(EnvironmentProblem, match="has schema version 2"):
        recorded(str(path), {}, ["nv/a"])
    assert digest(path) == before
    Store.open(parse(str(path), "--history", from_command_line=True)).close()  # as `run` opens it
    assert cli("history", "--history", str(path), "--no-plot").code == 0


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE rm_runs SET recorded_at = 'garbage'", "a run of nv/a has recorded_at 'garbage', not a time"),
        ("UPDATE rm_runs SET recorded_at = 12345", "a run of nv/a has recorded_at 12345, not a time"),
        ("UPDATE rm_samples SET value = 'notanumber'", "a sample of nv/a's m has value 'notanumber', not a number"),
        ("UPDATE rm_gates SET low = 'x'", "a gate of nv/a's m has low 'x', not a number"),
        ("UPDATE rm_runs SET trusted = 7", "a run of nv/a has trusted 7, not true or false"),
        ("UPDATE rm_runs SET attempt = 'one'", "a run of nv/a has attempt 'one', not an integer"),
    ],
)  # fmt: skip
def test_a_damaged_value_is_one_line_naming_the_store_and_the_row(cli, tmp_path, statement, message):
    path = a_store(tmp_path / "h.sqlite")
    sql(path, "UPDATE rm_gates SET metric = 'other'" if "rm_samples" in statement else "SELECT 1", statement)
    shown = cli("history", "--history", str(path), "--metric", "m", "--no-plot")
    assert (shown.code, shown.out) == (3, "")
    assert shown.err == (
        f"run-matrix: history store {path}: {message}: the store is damaged (or was not written by run-matrix)\n"
    )


def test_damaged_seconds_are_refused_by_a_plan(tmp_path):
    path = a_store(tmp_path / "h.sqlite")
    sql(path, "UPDATE rm_runs SET seconds = 'garbage'")
    with pytest.raises(
        EnvironmentProblem, match=r"^history store .*h.sqlite: .*seconds 'garbage', not a number"
    ):
        recorded(str(path), {}, ["nv/a"])


def test_text_from_the_store_never_reaches_the_terminal_raw(cli, tmp_path):
    cell = "nv/\x1b[31mred[bold]\u202e"
    path = a_store(tmp_path / "h.sqlite", cell)
    shown = cli("history", "--history", str(path), "--plot")
    assert shown.code == 0, shown.err
    assert "\x1b" not in shown.out and "\u202e" not in shown.out
    assert "nv/\\x1b[31mred[bold]\\u202e: m, 1 run" in shown.out  # escaped, and no markup
    metric = cli("history", "--history", str(path), "--metric", "nope", "--no-plot")
    assert metric.code == 2 and "\x1b" not in metric.err and "nv/\\x1b[31mred" in metric.err


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: p.mkdir(), "a directory"),
        (lambda p: os.mkfifo(p), "a named pipe (FIFO)"),  # opened, it would block the read
        (lambda p: p.symlink_to("/dev/zero"), "a character device"),  # read, it would never end
    ],
)
def test_what_is_not_a_file_is_named_and_never_opened(cli, tmp_path, make, kind):
    path = tmp_path / "h.sqlite"
    make(path)
    shown = cli("history", "--history", str(path))
    assert (shown.code, shown.err) == (3, f"run-matrix: {path} is {kind}, not a history store\n")
    with pytest.raises(EnvironmentProblem, match=re.escape(f"is {kind}")):
        recorded(str(path), {}, ["nv/a"])


def test_a_malformed_url_is_a_usage_or_environment_error_without_its_password(cli, monkeypatch):
    monkeypatch.setenv(ENV, "postgresql://u:pw-S3cret@[::1/db")
    shown = cli("history")
    assert (shown.code, shown.err) == (
        3,
        f"run-matrix: ${ENV}: not a database URL: an unclosed [ in its host "
        "(postgresql://USER@HOST[:PORT]/DATABASE)\n",
    )
    with pytest.raises(UsageError) as caught:
        parse("postgresql://u@[::1/db", "--history", from_command_line=True)
    assert "[::1" not in str(caught.value)
    with pytest.raises(EnvironmentProblem) as port:  # urllib would quote the "port": the password
        parse("postgresql://u:pw-S3cret/x@h/db", f"${ENV}", from_command_line=False)
    assert "S3cret" not in str(port.value)


def test_a_password_in_the_query_is_one_like_in_the_user_part(cli):
    url = "postgresql://u@127.0.0.1:1/db?password=S3cretQ"
    shown = cli("history", "--history", url)
    assert shown.code == 2 and "the URL holds a password" in shown.err and "S3cretQ" not in shown.err
    for spelled in ("PASSWORD=S3cretQ", "sslmode=disable&password=S3cretQ"):
        with pytest.raises(UsageError):
            parse(f"postgresql://u@h/db?{spelled}", "--history", from_command_line=True)
    location = locate(None, {ENV: url + "&sslmode=disable"}, Path("."))
    assert location.shown == "postgresql+psycopg://u@127.0.0.1:1/db?password=***&sslmode=disable"


def test_a_password_from_the_environment_is_never_printed_even_when_the_server_is_away(cli, monkeypatch):
    monkeypatch.setenv(ENV, "postgresql://u:S3cretP@127.0.0.1:1/db?password=S3cretQ&connect_timeout=5")
    shown = cli("history")
    assert shown.code == 3 and "cannot be opened" in shown.err, shown.err
    assert "S3cret" not in shown.err
    assert shown.err.startswith(
        "run-matrix: history store postgresql+psycopg://u:***@127.0.0.1:1/db?password=***&"
    )


def test_a_short_password_is_hidden_where_it_is_not_where_its_text_also_is():
    location = locate(None, {ENV: "postgresql://ci:127@127.0.0.1:5432/127?password=127"}, Path("."))
    assert location.shown == "postgresql+psycopg://ci:***@127.0.0.1:5432/127?password=***"
    message = "failed at postgresql://ci:127@127.0.0.1/db: password=127 host=127.0.0.1 password = '1 2'"
    assert (
        redacted(message)
        == "failed at postgresql://ci:***@127.0.0.1/db: password=*** host=127.0.0.1 password = ***"
    )


def test_a_read_of_a_database_without_a_store_writes_nothing_and_refuses_foreign_rm_tables(history_url):
    """On PostgreSQL too: a database of other things holds no runs; a read creates no table in it."""
    import sqlalchemy as sa

    if not history_url.startswith("postgresql"):
        pytest.skip("a SQLite file of other things is refused: test_a_foreign_sqlite_file_...")
    location = parse(history_url, "--history", from_command_line=True)
    engine = sa.create_engine(location.url)
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE other_things (x integer)"))
    reader = Reader.open(location)
    assert reader.empty and reader.rows("cells") == []
    reader.close()
    assert sa.inspect(engine).get_table_names() == ["other_things"]
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE rm_schema (version text)"))
        connection.execute(sa.text("INSERT INTO rm_schema VALUES ('abc')"))
    with pytest.raises(
        EnvironmentProblem, match=r"is not a run-matrix history store: its rm_schema.version is 'abc'"
    ):
        Reader.open(location)
    assert sorted(sa.inspect(engine).get_table_names()) == ["other_things", "rm_schema"]
    engine.dispose()
