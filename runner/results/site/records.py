"""The history store read for the site: every run of the cells, and each gated metric's series.

Three reads of ``compiled_reads.json`` (``report_runs``, ``report_gates``, ``report_last``), one
pass each over the rows; ``--since`` keeps the runs recorded from that day on.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.results.history.checks import Row
from runner.results.history.gates import LAST
from runner.results.history.reads import Reader

# the bisection an attempt belongs to (`run-matrix bisect`, schema 6); a store of an older schema has
# no such column, and its cell pages list no bisection
BISECTION_COLUMN = "bisection"
RETRIED = "retried"  # the recorder's note on every attempt but a cell's last: one run, not several


@dataclass(frozen=True)
class Run:
    """A cell's run as the store recorded it (its last attempt's row)."""

    seq: int
    id: str
    recorded_at: datetime.datetime
    cell: str
    content_hash: str
    hardware: str
    miles_commit: str
    attempt: int
    outcome: str  # the last attempt's: succeeded, failed, infra, timeout, stopped, not-submitted
    status: str  # the cell's: passed, failed, error, skipped, xfail, interrupted
    trusted: bool
    note: str
    seconds: float | None
    stack: str = ""
    bisection: str = ""  # the bisection the run was an attempt of ("" when none, or no such column)


@dataclass(frozen=True)
class Point:
    """One run's value of a metric, and the corridor its band judged it against."""

    run: str
    value: float | None
    low: float | None = None
    high: float | None = None
    verdict: str = ""


@dataclass(frozen=True)
class History:
    runs: tuple[Run, ...] = ()  # oldest first
    # (cell, metric) -> one point per run that recorded it, oldest first
    series: Mapping[tuple[str, str], tuple[Point, ...]] = field(default_factory=dict)

    def of(self, cell: str) -> list[Run]:
        return [run for run in self.runs if run.cell == cell]


def read(reader: Reader, since: datetime.date | None = None) -> History:
    where = reader.location.shown
    runs = [_run(Row(raw, where, "a run"), raw) for raw in reader.rows("report_runs")]
    runs = [run for run in runs if since is None or run.recorded_at.date() >= since]
    if not runs:
        return History()
    first = runs[0].seq
    by_seq = {run.seq: run for run in runs}
    gated = _gated(reader, first, by_seq)
    return History(tuple(r for r in runs if r.note != RETRIED), _series(reader, first, by_seq, gated))


def _run(row: Row, raw: Mapping[str, Any]) -> Run:
    bisection = raw.get(BISECTION_COLUMN)
    return Run(
        row.integer("seq"), row.text("id"), _utc(row.time("recorded_at")), row.text("cell"),
        row.text("content_hash"), row.text("hardware"), row.text("miles_commit"), row.integer("attempt"),
        row.text("outcome"), row.text("status"), row.flag("trusted"), row.text("note"), row.real("seconds"),
        row.text("stack"), "" if bisection is None else str(bisection),
    )  # fmt: skip


def _utc(when: datetime.datetime) -> datetime.datetime:
    """SQLite gives the time as written, without its zone (UTC, as the recorder writes it)."""
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def _gated(reader: Reader, first: int, by_seq: Mapping[int, Run]) -> dict[tuple[int, str], Point]:
    """Per (run, metric), the gate to draw: its last-value coordinate, else its latest step."""
    chosen: dict[tuple[int, str], tuple[int, Point]] = {}
    where = reader.location.shown
    for raw in reader.rows("report_gates", first=first):
        row = Row(raw, where, "a gate")
        run = by_seq.get(row.integer("run"))
        if run is None:
            continue
        key, step = (run.seq, row.text("metric")), row.integer("step")
        previous = chosen.get(key)
        if previous is None or (previous[0] != LAST and (step == LAST or step > previous[0])):
            point = Point(run.id, row.real("value"), row.real("low"), row.real("high"), row.text("verdict"))
            chosen[key] = (step, point)
    return {key: point for key, (_, point) in chosen.items()}


def _series(
    reader: Reader, first: int, by_seq: Mapping[int, Run], gated: Mapping[tuple[int, str], Point]
) -> dict[tuple[str, str], tuple[Point, ...]]:
    """Every metric's last values, with the gate's corridor where a band judged it."""
    points: dict[tuple[int, str], Point] = dict(gated)
    where = reader.location.shown
    for raw in reader.rows("report_last", first=first):
        row = Row(raw, where, "a sample")
        key = (row.integer("run"), row.text("metric"))
        run = by_seq.get(key[0])
        if run is not None and key not in points:
            points[key] = Point(run.id, row.real("value"))
    found: dict[tuple[str, str], list[Point]] = {}
    for (seq, metric), point in sorted(points.items()):
        found.setdefault((by_seq[seq].cell, metric), []).append(point)
    return {key: tuple(value) for key, value in found.items()}
