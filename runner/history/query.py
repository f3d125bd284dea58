"""What ``run-matrix history`` reads: the runs of some cells and one metric's points over them."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from runner.history import schema
from runner.history.gates import LAST
from runner.history.store import Store


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


def cells(store: Store) -> list[str]:
    with store.reading() as connection:
        return list(
            connection.execute(
                sa.select(schema.runs.c.cell).distinct().order_by(schema.runs.c.cell)
            ).scalars()
        )


def points(store: Store, cell: str, metric: str | None, last: int) -> tuple[str | None, list[Point]]:
    """The last ``last`` runs of ``cell``, oldest first, with ``metric`` (default: the first gated
    metric of its newest run, else its first metric); and the metric chosen."""
    runs = schema.runs
    query = sa.select(runs).where(runs.c.cell == cell).order_by(runs.c.seq.desc()).limit(last)
    with store.reading() as connection:
        rows = list(reversed(connection.execute(query).mappings().all()))
        seqs = [row["seq"] for row in rows]
        metric = metric or _default_metric(connection, seqs)
        values = _last_values(connection, seqs, metric) if metric else {}
        gates = _gates(connection, seqs, metric) if metric else {}
    found = []
    for row in rows:
        value, at = values.get(row["seq"], (None, None))
        gate = gates.get(row["seq"])
        if gate is not None:  # the judged coordinate, with its corridor
            value, at = gate["value"], gate["at_step"]
        found.append(
            Point(
                row["id"], row["recorded_at"], row["cell"], row["content_hash"], row["hardware"],
                row["miles_commit"], row["attempt"], row["status"], row["trusted"], row["note"], value, at,
                gate["reference"] if gate else None, gate["low"] if gate else None,
                gate["high"] if gate else None, gate["verdict"] if gate else "",
            )
        )  # fmt: skip
    return metric, found


def metrics(store: Store, cell: str) -> list[str]:
    runs, samples = schema.runs, schema.samples
    query = (
        sa.select(samples.c.metric)
        .distinct()
        .join(runs, runs.c.seq == samples.c.run)
        .where(runs.c.cell == cell)
    )
    with store.reading() as connection:
        return sorted(connection.execute(query).scalars())


def _default_metric(connection: sa.Connection, seqs: Sequence[int]) -> str | None:
    for table in (schema.gates, schema.samples):
        query = (
            sa.select(table.c.metric)
            .where(table.c.run.in_(seqs))
            .order_by(table.c.run.desc(), table.c.metric)
        )
        found = connection.execute(query.limit(1)).scalar()
        if found is not None:
            return str(found)
    return None


def _last_values(
    connection: sa.Connection, seqs: Sequence[int], metric: str
) -> dict[int, tuple[float | None, int]]:
    samples = schema.samples
    query = sa.select(samples.c.run, samples.c.value, samples.c.step).where(
        samples.c.run.in_(seqs), samples.c.metric == metric, samples.c.last.is_(True)
    )
    return {row[0]: (row[1], row[2]) for row in connection.execute(query)}


def _gates(connection: sa.Connection, seqs: Sequence[int], metric: str) -> dict[int, dict[str, Any]]:
    """Per run, the gate of ``metric`` to draw: its last-value coordinate, else its latest step."""
    gates = schema.gates
    query = (
        sa.select(gates)
        .where(gates.c.run.in_(seqs), gates.c.metric == metric)
        .order_by(gates.c.run, gates.c.step)
    )
    chosen: dict[int, dict[str, Any]] = {}
    for row in connection.execute(query).mappings():
        previous = chosen.get(row["run"])
        if previous is None or previous["step"] != LAST:
            chosen[row["run"]] = dict(row)
    return chosen


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
        for cell, seconds in connection.execute(query, {"cells": list(cells)}):
            found.setdefault(cell, []).append(float(seconds))
    return found
