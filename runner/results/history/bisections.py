"""bisections: what ``bisect`` keeps in the history store — each bisection as it was started, and the
outcome each of its attempts told it, so that ``bisect --resume ID`` goes on where it stopped."""

from __future__ import annotations

import datetime
import re
import uuid
from dataclasses import dataclass

import sqlalchemy as sa

from runner.errors import UsageError
from runner.results.history import schema
from runner.results.history.store import Store

BISECTION_ID = re.compile(r"[0-9a-f]{12}")
OUTCOMES = ("pass", "fail", "env")


@dataclass(frozen=True)
class Started:
    """A bisection as it was started: what it bisects, between which commits, by which rule."""

    id: str
    cell: str
    good: str
    bad: str
    attempts: int
    max_runs: int | None
    metric: str  # "" when every gate decides


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def start(store: Store, started: Started) -> None:
    row = {**started.__dict__, "started_at": datetime.datetime.now(datetime.timezone.utc)}
    with store.failing_as_environment(), store.writing() as connection:
        connection.execute(sa.insert(schema.bisections).values(**row))


def find(store: Store, bisection: str) -> Started:
    """The bisection ``bisection`` names; a usage error (exit 2) when the store has none."""
    shown = bisection if len(bisection) <= 40 else f"{bisection[:40]}..."
    if not BISECTION_ID.fullmatch(bisection):
        raise UsageError(f"--resume {shown!r}: a bisection id is 12 hex digits, as `bisect` printed it")
    table = schema.bisections
    with store.reading() as connection:
        row = connection.execute(sa.select(table).where(table.c.id == bisection)).mappings().first()
    if row is None:
        raise UsageError(
            f"--resume {bisection}: no such bisection in the history store {store.location.shown}"
        )
    return Started(
        str(row["id"]), str(row["cell"]), str(row["good"]), str(row["bad"]), int(row["attempts"]),
        None if row["max_runs"] is None else int(row["max_runs"]), str(row["metric"]),
    )  # fmt: skip


def outcomes(store: Store, bisection: str) -> list[tuple[str, str]]:
    """``(commit, outcome)`` of every attempt the bisection recorded, in the order they ran; a row
    whose outcome is none of pass, fail, env (a damaged or foreign row) is passed over."""
    runs = schema.runs
    query = (
        sa.select(runs.c.miles_commit, runs.c.bisect_outcome)
        .where(runs.c.bisection == bisection, runs.c.bisect_outcome != "")
        .order_by(runs.c.seq)
    )
    with store.reading() as connection:
        rows = connection.execute(query).all()
    return [(str(commit), str(outcome)) for commit, outcome in rows if outcome in OUTCOMES]
