"""The statements that read the history store, in SQLAlchemy Core: ``reads()`` for ``run-matrix
history`` and ``durations`` for ``ci plan``.

``history`` has a 300 ms budget as a fresh process, and importing SQLAlchemy alone takes 160–320 ms
of it on a 2-core machine. So ``reads()`` are compiled here once per dialect into
``compiled_reads.json`` beside this module (generated: ``pytest tests/test_history_query.py
--update-golden`` rewrites it, and that test fails while it is stale), and ``runner.results.history.reads``
executes that SQL through the DB-API driver SQLAlchemy itself drives (sqlite3, psycopg). Each read
takes scalar parameters only (no expanding ``IN``), so its text is complete once compiled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from runner.results.history import checks, schema
from runner.results.history.store import Store


def _chosen() -> sa.ScalarSelect[Any]:
    """The last ``:last`` runs of ``:cell``."""
    runs = schema.runs
    return (
        sa.select(runs.c.seq)
        .where(runs.c.cell == sa.bindparam("cell"))
        .order_by(runs.c.seq.desc())
        .limit(sa.bindparam("last"))
        .scalar_subquery()
    )


def _newest_metric(table: sa.Table) -> sa.Select[Any]:
    """The first metric (by name) of the newest of the chosen runs that has one in ``table``."""
    return (
        sa.select(table.c.metric)
        .where(table.c.run.in_(_chosen()))
        .order_by(table.c.run.desc(), table.c.metric)
        .limit(1)
    )


def reads() -> dict[str, sa.Select[Any]]:
    """Every statement ``history`` runs, by name; ``runner.results.history.reads`` says what each returns."""
    runs, samples, gates = schema.runs, schema.samples, schema.gates
    return {
        "version": sa.select(sa.func.max(schema.schema_table.c.version)),
        "cells": sa.select(runs.c.cell).distinct().order_by(runs.c.cell),
        "runs": sa.select(runs).where(runs.c.cell == sa.bindparam("cell")).order_by(runs.c.seq.desc())
        .limit(sa.bindparam("last")),
        "metrics": sa.select(samples.c.metric).distinct().join(runs, runs.c.seq == samples.c.run)
        .where(runs.c.cell == sa.bindparam("cell")).order_by(samples.c.metric),
        "gated_metric": _newest_metric(gates),
        "sampled_metric": _newest_metric(samples),
        "last_values": sa.select(samples.c.run, samples.c.value, samples.c.step).where(
            samples.c.run.in_(_chosen()), samples.c.metric == sa.bindparam("metric"), samples.c.last.is_(True)
        ),
        "gates": sa.select(gates).where(gates.c.run.in_(_chosen()), gates.c.metric == sa.bindparam("metric"))
        .order_by(gates.c.run, gates.c.step),
        **_learning_reads(),
        **_report_reads(),
    }  # fmt: skip


def _learning_reads() -> dict[str, sa.Select[Any]]:
    """What ``history recommend`` and ``validate --history`` read: the newest trusted run of a cell,
    the series of the trusted runs that share its identity, a metric's recorded range on a cell and
    the most baseline runs any of its gates had."""
    runs, samples, gates = schema.runs, schema.samples, schema.gates
    cell = runs.c.cell == sa.bindparam("cell")
    same = (
        cell,
        runs.c.trusted.is_(True),
        runs.c.content_hash == sa.bindparam("content_hash"),
        runs.c.hardware == sa.bindparam("hardware"),
        runs.c.stack == sa.bindparam("stack"),
    )
    chosen = sa.select(runs.c.seq).where(*same).order_by(runs.c.seq.desc()).limit(sa.bindparam("last"))
    in_cell = sa.select(runs.c.seq).where(cell).scalar_subquery()
    value = samples.c.value
    return {
        "newest_trusted": sa.select(runs).where(cell, runs.c.trusted.is_(True)).order_by(runs.c.seq.desc())
        .limit(1),
        "trusted_series": sa.select(samples.c.run, samples.c.step, value, samples.c.last)
        .where(samples.c.run.in_(chosen.scalar_subquery()), samples.c.metric == sa.bindparam("metric"))
        .order_by(samples.c.run, samples.c.step),
        "extent": sa.select(sa.func.min(value).label("low"), sa.func.max(value).label("high"),
                            sa.func.max(sa.func.abs(value)).label("largest"),
                            sa.func.count(value).label("count"))
        .where(samples.c.run.in_(in_cell), samples.c.metric == sa.bindparam("metric")),
        "most_baseline": sa.select(sa.func.max(gates.c.baseline_runs).label("most"))
        .where(gates.c.run.in_(in_cell), gates.c.metric == sa.bindparam("metric")),
    }  # fmt: skip


def _report_reads() -> dict[str, sa.Select[Any]]:
    """What ``report --html`` reads: every run (each column, so that one a later schema adds, such as
    a bisection's id, reaches the site), and the gates and last values of the runs from ``:first`` on."""
    runs, samples, gates = schema.runs, schema.samples, schema.gates
    judged = (gates.c.run, gates.c.metric, gates.c.step, gates.c.value, gates.c.reference, gates.c.low)
    return {
        "report_runs": sa.select(runs).order_by(runs.c.seq),
        "report_gates": sa.select(*judged, gates.c.high, gates.c.verdict)
        .where(gates.c.run >= sa.bindparam("first")).order_by(gates.c.run, gates.c.metric, gates.c.step),
        "report_last": sa.select(samples.c.run, samples.c.metric, samples.c.value)
        .where(samples.c.run >= sa.bindparam("first"), samples.c.last.is_(True)),
    }  # fmt: skip


DIALECTS = ("sqlite", "postgresql")


def compile_reads(dialect_name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """``reads()`` as the DB-API driver of ``dialect_name`` takes them: named parameters (sqlite3's
    ``:name``, psycopg's ``%(name)s``) and the constants SQLAlchemy bound (an ``OFFSET 0``)."""
    driver = {"sqlite": "sqlite+pysqlite://", "postgresql": "postgresql+psycopg://"}[dialect_name]
    style = {"paramstyle": "named"} if dialect_name == "sqlite" else {}  # psycopg's own: %(name)s
    dialect = sa.make_url(driver).get_dialect()(**style)
    compiled = {}
    for name, statement in reads().items():
        done = statement.compile(dialect=dialect)
        constants = {key: value for key, value in done.params.items() if value is not None}
        compiled[name] = (done.string, constants)
    return compiled


def compiled_json() -> str:
    """The text of ``compiled_reads.json``: the schema version the reads are of, its
    tables' columns, and the SQL."""
    sql = {name: compile_reads(name) for name in DIALECTS}
    # the tables and columns of this version: a read refuses a store without them
    columns = {
        table.name: [column.name for column in table.columns] for table in schema.metadata.sorted_tables
    }
    compiled = {"version": schema.VERSION, "sql": sql, "columns": columns}
    return json.dumps(compiled, indent=1, sort_keys=True) + "\n"


def durations(store: Store, cells: Sequence[str], last: int) -> dict[str, list[float]]:
    """The wall-clock seconds of the last ``last`` passed runs of each of ``cells`` (newest first),
    in one query; a cell with none recorded is absent."""
    runs = schema.runs
    newest = sa.func.row_number().over(partition_by=runs.c.cell, order_by=runs.c.seq.desc())
    ranked = (
        sa.select(runs.c.cell, runs.c.seconds, newest.label("newest"))
        .where(runs.c.cell.in_(sa.bindparam("cells", expanding=True)))
        .where(runs.c.status == "passed", runs.c.seconds.is_not(None))
        .subquery()
    )
    query = (
        sa.select(ranked.c.cell, ranked.c.seconds)
        .where(ranked.c.newest <= last)
        .order_by(ranked.c.cell, ranked.c.newest)
    )
    found: dict[str, list[float]] = {}
    with store.reading() as connection:
        for row in connection.execute(query, {"cells": list(cells)}).mappings():
            checked = checks.Row(
                dict(row), store.location.shown, f"a run of {checks.printable(str(row['cell']))}"
            )
            found.setdefault(row["cell"], []).append(checked.real("seconds") or 0.0)
    return found
