"""The parity page's facts: the coverage table with each cell's latest status, the share of tests
that run on each hardware and vendor, the skips with their issue and expiry, and the tests whose
cells pass on one platform and fail on another. Pure."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.results.coverage import Row
from runner.results.site.facts import kind
from runner.results.site.records import Run


@dataclass(frozen=True)
class Skip:
    cell: str
    hardware: str
    reason: str
    issue: str
    expires: datetime.date | None
    expired: bool


@dataclass(frozen=True)
class Refused:
    """A spec that does not build, and why (a skip past its expiry is one)."""

    spec: str
    message: str
    expired: bool


@dataclass(frozen=True)
class Share:
    name: str  # a hardware profile, or a vendor
    running: int  # tests with a cell that runs there
    tests: int

    @property
    def percent(self) -> float:
        return 100.0 * self.running / self.tests if self.tests else 0.0


@dataclass(frozen=True)
class Parity:
    rows: tuple[Row, ...]  # split ones first
    split: frozenset[tuple[str, str]]  # (test, variant) of the rows that pass somewhere and fail elsewhere
    latest: Mapping[str, Run]  # each cell's newest run
    hardware: tuple[Share, ...]
    vendors: tuple[Share, ...]
    skips: tuple[Skip, ...]
    refused: tuple[Refused, ...] = ()


def parity(
    rows: Sequence[Row],
    vendors: Mapping[str, str],
    runs: Sequence[Run],
    skips: Sequence[Skip],
    refused: Sequence[Refused] = (),
) -> Parity:
    """``vendors``: each hardware profile's vendor; ``runs``: the store's, oldest first."""
    latest = {run.cell: run for run in runs}
    split = frozenset((r.test, r.variant) for r in rows if _split(r, vendors, latest))
    ordered = sorted(rows, key=lambda r: ((r.test, r.variant) not in split, r.test, r.variant))
    by_hardware = tuple(Share(h, sum(_runs(r, h) for r in rows), len(rows)) for h in vendors)
    by_vendor = tuple(
        Share(v, sum(any(_runs(r, h) for h in vendors if vendors[h] == v) for r in rows), len(rows))
        for v in sorted(set(vendors.values()))
    )
    return Parity(tuple(ordered), split, latest, by_hardware, by_vendor, tuple(skips), tuple(refused))


RUNNING = ("runs", "unchecked")  # a cell whose requires: no checkout checked is in CI all the same


def _runs(row: Row, hardware: str) -> bool:
    entry = row.entries.get(hardware)
    return entry is not None and entry.status in RUNNING


def _split(row: Row, vendors: Mapping[str, str], latest: Mapping[str, Run]) -> bool:
    """Its newest runs passed on one platform (vendor) and failed on another."""
    passed, failed = set(), set()
    for hardware, entry in row.entries.items():
        for cell in entry.cells:
            run = latest.get(cell)
            found = kind(run) if run else "none"
            if found == "passed":
                passed.add(vendors.get(hardware, hardware))
            elif found in ("gate", "job"):
                failed.add(vendors.get(hardware, hardware))
    return any(a != b for a in passed for b in failed)


def expired(expires: datetime.date | None, today: datetime.date) -> bool:
    return expires is not None and expires < today
