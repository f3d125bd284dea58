"""The plan: every runnable cell onto one runner class, then spread over that class's runners.

Routing: a cell whose ``ci.runs_on`` names a class goes there; one whose ``ci.suite`` a class
serves goes to those classes; any other to any class. Among those, the class must have the
cell's hardware and at least its GPUs; the smallest such class wins (an 8-GPU host is not
spent on a 4-GPU cell while a 4-GPU share exists), the first in the file on a tie.

Balancing is miles' own (``run_suite.py``'s LPT): longest est_time first, each onto the
least-loaded shard. A shard then holds at most the class's total / count plus its longest
cell: when a cell is added, its shard was the least loaded, so below the mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from schemas.ci_plan import CiPlan, LeftOut, PlannedCell, RunnerClassLoad, Shard
from schemas.runners import RunnerClass


@dataclass(frozen=True)
class ClassShards:
    """One class's share of the plan: its cells, spread over its runners."""

    runner: RunnerClass
    shards: list[list[PlannedCell]]


def plan(
    cells: Sequence[PlannedCell],
    classes: Sequence[RunnerClass],
    left_out: Mapping[str, str],
    *,
    nightly: bool,
    specs: Sequence[str],
) -> CiPlan:
    """``cells``: every selected cell; ``left_out``: the ids not to plan (skipped), with the reason."""
    routed: dict[int, list[PlannedCell]] = {index: [] for index in range(len(classes))}
    unplaced, skipped = [], []
    for cell in cells:
        reason = left_out.get(cell.id) or (
            "nightly: planned only with --nightly" if cell.ci.nightly and not nightly else ""
        )
        if reason:
            skipped.append(LeftOut(id=cell.id, hardware=cell.hardware, gpus=cell.gpus, reason=reason))
            continue
        chosen = route(cell, classes)
        if isinstance(chosen, str):
            unplaced.append(LeftOut(id=cell.id, hardware=cell.hardware, gpus=cell.gpus, reason=chosen))
        else:
            routed[chosen].append(cell)
    spread = [
        ClassShards(runner, balance(routed[index], runner.count)) for index, runner in enumerate(classes)
    ]
    shards, loads = _numbered(spread)
    planned = [c for each in spread for shard in each.shards for c in shard]
    return CiPlan(
        specs=list(specs),
        nightly=nightly,
        cells=planned,
        shards=shards,
        classes=loads,
        unplaced=unplaced,
        left_out=skipped,
        gpu_hours=round(sum(c.gpu_hours for c in planned), 4),
    )


def route(cell: PlannedCell, classes: Sequence[RunnerClass]) -> int | str:
    """The index of the class ``cell`` goes to, or why none can take it."""
    candidates, why = _candidates(cell, classes)
    if not candidates:
        return why
    same = [i for i in candidates if classes[i].hardware == cell.hardware]
    if not same:
        have = sorted({classes[i].hardware for i in candidates})
        return f"no runner class{why} has hardware {cell.hardware} (they have: {', '.join(have)})"
    fits = [i for i in same if classes[i].gpus >= cell.gpus]
    if not fits:
        owned = ", ".join(f"{classes[i].name}: {classes[i].gpus}" for i in same)
        return f"needs {cell.gpus} GPUs; the {cell.hardware} runners{why} own fewer ({owned})"
    return min(fits, key=lambda i: (classes[i].gpus, i))


def _candidates(cell: PlannedCell, classes: Sequence[RunnerClass]) -> tuple[list[int], str]:
    """The classes ``ci.runs_on`` or ``ci.suite`` allow, and words that say which (or why none)."""
    everything = list(range(len(classes)))
    if cell.ci.runs_on is not None:
        named = [i for i in everything if classes[i].name == cell.ci.runs_on]
        if not named:
            labels = ", ".join(c.name for c in classes)
            return [], f"ci.runs_on: {cell.ci.runs_on!r} names no runner class (labels: {labels})"
        return named, f" labelled {cell.ci.runs_on}"
    if cell.ci.suite is not None:
        serving = [i for i in everything if cell.ci.suite in classes[i].suites]
        if serving:
            return serving, f" serving suite {cell.ci.suite}"
    return everything, ""


def balance(cells: Sequence[PlannedCell], count: int) -> list[list[PlannedCell]]:
    """``cells`` over ``count`` shards: longest first, each onto the least-loaded (then lowest) shard."""
    shards: list[list[PlannedCell]] = [[] for _ in range(count)]
    loads = [0] * count
    for cell in sorted(cells, key=lambda c: (-c.est_time, c.id)):
        lightest = min(range(count), key=lambda k: (loads[k], k))
        shards[lightest].append(cell)
        loads[lightest] += cell.est_time
    return shards


def _numbered(spread: Sequence[ClassShards]) -> tuple[list[Shard], list[RunnerClassLoad]]:
    """Shards that have cells, numbered across the plan; each class's load and bound."""
    shards: list[Shard] = []
    loads: list[RunnerClassLoad] = []
    for each in spread:
        runner, numbers = each.runner, []
        for cells in each.shards:
            if cells:
                numbers.append(len(shards))
                load = sum(c.est_time for c in cells)
                ids = [c.id for c in cells]
                shards.append(
                    Shard(shard=len(shards), label=runner.name, runs_on=runner.label, load=load, cells=ids)
                )
        planned = [c for cells in each.shards for c in cells]
        total = sum(c.est_time for c in planned)
        longest = max((c.est_time for c in planned), default=0)
        loads.append(
            RunnerClassLoad(
                label=runner.name,
                runs_on=runner.label,
                hardware=runner.hardware,
                gpus=runner.gpus,
                count=runner.count,
                cells=len(planned),
                total=total,
                longest=longest,
                bound=longest + total / runner.count,
                shards=numbers,
            )
        )
    return shards, loads
