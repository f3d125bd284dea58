"""GPU-hours from the history: each run's wall-clock seconds times its cell's GPUs, per suite,
hardware and ISO week, against a weekly budget where one is given. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.results.site.records import Run

NO_SUITE = "(no suite)"


@dataclass(frozen=True)
class Spent:
    week: str  # ISO week, 2026-W49
    suite: str
    hardware: str
    runs: int
    gpu_hours: float


@dataclass(frozen=True)
class Budget:
    spent: tuple[Spent, ...]  # by week, suite, hardware
    weeks: tuple[tuple[str, float], ...]  # each week's total
    limit: float | None  # GPU-hours a week (--budget-gpu-hours)
    unknown: int  # runs of cells no spec names (their GPUs unknown), left out

    def over(self) -> list[str]:
        return [week for week, hours in self.weeks if self.limit is not None and hours > self.limit]


def budget(
    runs: Sequence[Run], gpus: Mapping[str, int], suites: Mapping[str, str], limit: float | None
) -> Budget:
    """``gpus``, ``suites``: each cell's GPUs and CI suite (or runner label), from its spec."""
    found: dict[tuple[str, str, str], list[float]] = {}
    unknown = 0
    for run in runs:
        if run.seconds is None:
            continue
        if run.cell not in gpus:
            unknown += 1
            continue
        year, week, _ = run.recorded_at.isocalendar()
        key = (f"{year}-W{week:02d}", suites.get(run.cell) or NO_SUITE, run.hardware)
        found.setdefault(key, []).append(run.seconds * gpus[run.cell] / 3600)
    spent = tuple(Spent(*key, len(hours), sum(hours)) for key, hours in sorted(found.items()))
    weeks: dict[str, float] = {}
    for each in spent:
        weeks[each.week] = weeks.get(each.week, 0.0) + each.gpu_hours
    return Budget(spent, tuple(weeks.items()), limit, unknown)
