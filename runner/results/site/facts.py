"""What a cell's runs say: each run's kind of failure, the current failure streak, the flip rate. Pure."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from runner.errors import counted
from runner.results.site.records import Run

Kind = Literal["passed", "gate", "job", "infra", "none"]
# the attempt's outcomes that say the machine, not the code, failed (exit 3, preflight, a prepare step)
INFRA_OUTCOMES = frozenset({"infra", "timeout", "stopped", "not-submitted"})
KIND_WORDS: dict[Kind, str] = {
    "passed": "passed",
    "gate": "gate failure",  # the job succeeded, a metric broke its bound or left its corridor
    "job": "job failure",  # the job itself failed
    "infra": "infra failure",
    "none": "no verdict",  # skipped, interrupted, an expected failure
}
FLAKY_WINDOW = 10
FLAKY_FLIPS = 3


def kind(run: Run) -> Kind:
    if run.status == "passed":
        return "passed"
    if run.status == "error" or run.outcome in INFRA_OUTCOMES:
        return "infra"
    if run.status == "failed":
        return "gate" if run.outcome == "succeeded" else "job"
    return "none"


@dataclass(frozen=True)
class Streak:
    runs: int  # the newest runs that failed in a row; 0 when the newest passed
    since: datetime.datetime | None  # when the first of them ran
    kinds: tuple[tuple[Kind, int], ...] = ()  # how many of each kind, most first

    def describe(self) -> str:
        if not self.runs or self.since is None:
            return "none"
        counts = ", ".join(counted(count, KIND_WORDS[k]) for k, count in self.kinds)
        return f"{counted(self.runs, 'run')} since {self.since:%Y-%m-%d %H:%M} ({counts})"


def streak(runs: Sequence[Run]) -> Streak:
    """The current failure streak of one cell's runs (oldest first); runs without a verdict of
    their own (skipped, interrupted) neither end nor extend it."""
    failed: list[Run] = []
    for run in reversed(runs):
        found = kind(run)
        if found == "passed":
            break
        if found != "none":
            failed.append(run)
    counted: dict[Kind, int] = {}
    for run in failed:
        counted[kind(run)] = counted.get(kind(run), 0) + 1
    kinds = tuple(sorted(counted.items(), key=lambda item: (-item[1], item[0])))
    return Streak(len(failed), failed[-1].recorded_at if failed else None, kinds)


@dataclass(frozen=True)
class Flips:
    flips: int  # verdict changes between consecutive runs of the window
    verdicts: int  # runs of the window with a verdict
    window: int
    content_hash: str  # the newest run's, which the window's runs share
    flaky: bool

    @property
    def rate(self) -> float:
        return self.flips / (self.verdicts - 1) if self.verdicts > 1 else 0.0

    def describe(self) -> str:
        if self.verdicts < 2:
            return "too few runs with a verdict"
        return f"{counted(self.flips, 'flip')} in the last {counted(self.verdicts, 'run')}"


def flips(runs: Sequence[Run], window: int = FLAKY_WINDOW, threshold: int = FLAKY_FLIPS) -> Flips:
    """The flips among the last ``window`` runs with a verdict at the newest run's content hash;
    flaky at ``threshold`` or more. An infra failure is no verdict: it says nothing of the code."""
    if not runs:
        return Flips(0, 0, window, "", False)
    newest = runs[-1].content_hash
    verdicts = [
        kind(r) == "passed" for r in runs if r.content_hash == newest and kind(r) not in ("infra", "none")
    ]
    verdicts = verdicts[-window:]
    changed = sum(a != b for a, b in itertools.pairwise(verdicts))
    return Flips(changed, len(verdicts), window, newest, changed >= threshold)
