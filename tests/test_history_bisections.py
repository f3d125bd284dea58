"""Bisections in the history store (schema 6), on SQLite and a real PostgreSQL: a bisection as started,
its attempts' commits and outcomes in order, and a version 5 store migrated with its runs kept."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from runner.errors import UsageError
from runner.results.history import bisections, schema
from runner.results.history.bisections import Started
from runner.results.history.location import parse
from runner.results.history.store import AttemptRecord, Identity, Store

IDENTITY = Identity("fake/async", "m/fake/async.yaml", "abc123", "mi355x", "", "0.1.0")


@pytest.fixture
def store(history_url: str):
    opened = Store.open(parse(history_url, "--history", from_command_line=True))
    yield opened
    opened.close()


def attempt(store: Store, commit: str, outcome: str, bisection: str = "0123456789ab") -> str:
    identity = Identity(
        IDENTITY.cell, IDENTITY.spec, IDENTITY.content_hash, IDENTITY.hardware, commit, "0.1.0"
    )
    record = AttemptRecord(identity, 1, "job", "succeeded", "passed", False, "bisection", {}, (), 1.0, "",
                           bisection, outcome)  # fmt: skip
    return store.record(record)


def test_a_bisection_and_its_attempts_read_back_in_order(store):
    started = Started("0123456789ab", "fake/async", "a" * 40, "b" * 40, 3, None, "")
    bisections.start(store, started)
    assert bisections.find(store, "0123456789ab") == started
    attempt(store, "b" * 40, "fail")
    attempt(store, "a" * 40, "pass")
    attempt(store, "c" * 40, "env")
    attempt(store, "d" * 40, "pass", bisection="")  # a run's, not the bisection's
    attempt(store, "e" * 40, "")  # a retried attempt: it told the bisection nothing
    assert bisections.outcomes(store, "0123456789ab") == [
        ("b" * 40, "fail"),
        ("a" * 40, "pass"),
        ("c" * 40, "env"),
    ]
    with pytest.raises(UsageError, match="--resume fedcba987654: no such bisection in the history store"):
        bisections.find(store, "fedcba987654")


def test_a_version_5_store_gains_the_bisection_columns_and_table_and_keeps_its_runs(history_url, store):
    attempt(store, "a" * 40, "", bisection="")
    with store.writing() as connection:  # back to what version 5 wrote
        connection.execute(sa.text("DROP TABLE rm_bisections"))
        connection.execute(sa.text("ALTER TABLE rm_runs DROP COLUMN bisection"))
        connection.execute(sa.text("ALTER TABLE rm_runs DROP COLUMN bisect_outcome"))
        connection.execute(sa.update(schema.schema_table).values(version=5))
    store.close()
    reopened = Store.open(parse(history_url, "--history", from_command_line=True))
    with reopened.engine.connect() as connection:
        assert connection.execute(sa.select(schema.schema_table.c.version)).scalar() == schema.VERSION == 6
        rows = connection.execute(sa.select(schema.runs.c.miles_commit, schema.runs.c.bisection)).all()
        assert rows == [("a" * 40, "")]
    bisections.start(reopened, Started("0123456789ab", "fake/async", "a" * 40, "b" * 40, 2, 10, "m"))
    assert bisections.find(reopened, "0123456789ab").max_runs == 10
    reopened.close()
