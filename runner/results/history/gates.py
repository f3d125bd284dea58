"""gates: a band of ``expect:`` judged against the trusted baseline, coordinate by coordinate. Pure.

The semantics are miles' ``tests/ci/metric_history`` (``register_ci_gate``):

* ``steps: last`` is one coordinate (step -1: the last value, whatever its step); ``all`` is one
  per step present; a list is one per named step, and a named step that is missing is an error.
* A non-finite value at a chosen coordinate, or a step printed twice, is an error, never skipped.
* The corridor is ``[ref - max(rel_down*|ref|, abs_floor_down), ref + max(rel_up*|ref|,
  abs_floor_up)]`` around ``ref``, the mean of the coordinate over the baseline runs.
* No baseline value for the coordinate: inactive (a cold start), not a failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from runner.errors import counted
from runner.results.outcome import Gate, GateVerdict, Sample

if TYPE_CHECKING:  # `history` reads the store without pydantic's start-up
    from schemas.run import Band, Expectation

LAST = -1  # the coordinate of steps: last


@dataclass(frozen=True)
class Reference:
    """The baseline of one coordinate: the mean over ``runs`` trusted runs."""

    mean: float
    runs: int


Baseline = Mapping[tuple[str, int], Reference]  # (metric, step) -> reference


class SelectionError(ValueError):
    """The coordinates a band asks for are not in the series."""


Steps = Literal["all", "last"] | list[int]


def coordinates(samples: Sequence[Sample], steps: Steps) -> list[tuple[int, int, float]]:
    """``(coordinate step, step it came from, value)`` for each coordinate ``steps`` picks."""
    if not samples:
        raise SelectionError("was never printed")
    if steps == "last":
        last = samples[-1]
        _finite(last.value, f"its last value (step {last.step})")
        return [(LAST, last.step, last.value)]
    by_step: dict[int, float] = {}
    for sample in samples:
        if sample.step in by_step:
            raise SelectionError(f"has two values at step {sample.step}")
        by_step[sample.step] = sample.value
    wanted = sorted(by_step) if steps == "all" else [int(k) for k in steps]
    missing = [k for k in wanted if k not in by_step]
    if missing:
        seen = ", ".join(map(str, sorted(by_step)))
        raise SelectionError(f"has no value at step {missing[0]} (steps: {seen})")
    for k in wanted:
        _finite(by_step[k], f"step {k}")
    return [(k, k, by_step[k]) for k in wanted]


def _finite(value: float, where: str) -> None:
    if not math.isfinite(value):
        raise SelectionError(f"is {value} at {where}; a gate judges only finite values")


def judge(name: str, expectation: Expectation, samples: Sequence[Sample], baseline: Baseline) -> list[Gate]:
    """One gate per coordinate of ``expectation.band`` (none without a band)."""
    band = expectation.band
    if band is None:
        return []
    try:
        chosen = coordinates(samples, expectation.selection)
    except SelectionError as exc:
        message = f"{name} {exc}"
        return [Gate(name, LAST, None, None, None, None, None, 0, "error", expectation.enforced, message)]
    described = band.describe()  # once per band: a cell of `steps: all` has a coordinate per step
    return [
        _judge_one(name, band, described, expectation.enforced, (step, at, value), baseline.get((name, step)))
        for step, at, value in chosen
    ]


def _judge_one(
    name: str,
    band: Band,
    described: str,
    enforce: bool,
    coordinate: tuple[int, int, float],
    reference: Reference | None,
) -> Gate:
    step, at, value = coordinate
    where = f"{name} at {'the last step (' + str(at) + ')' if step == LAST else f'step {at}'}"
    if reference is None:
        message = f"{where}: {value:.6g}; gate inactive (cold start: no trusted run to compare with)"
        return Gate(name, step, at, value, None, None, None, 0, "inactive", enforce, message)
    low, high = band.corridor(reference.mean)
    inside = low <= value <= high
    runs = f"mean of {counted(reference.runs, 'trusted run')}"
    position = "within" if inside else "outside"
    message = (
        f"{where}: {value:.6g} is {position} the corridor [{low:.6g}, {high:.6g}] "
        f"(reference {reference.mean:.6g}, {runs}; band {described})"
    )
    if not inside and not enforce:
        message += " — reported only (enforce: false)"
    verdict: GateVerdict = "pass" if inside else "fail"
    return Gate(name, step, at, value, reference.mean, low, high, reference.runs, verdict, enforce, message)
