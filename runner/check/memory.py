"""P10, P11, P12: whether a cell fits its GPUs' memory (``runner.memory``), phase by phase.

P10 is an error and counts only what must be there (weights, main grads, optimizer state; an engine's
weights within its static memory): the cell cannot start. P11 is a warning: the estimate, with its
allowances, is over the GPU. P12 is a warning: an engine's KV pool holds less than one group of
samples, so SGLang queues or retracts them. The memory is the profile's ``memory_gb`` (its
``sources.machine``). P8 and P9 (the weights alone) are folded into P10.
"""

from __future__ import annotations

from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import problem, rule
from runner.errors import Problem
from runner.memory.estimate import Estimate, estimate
from runner.memory.hints import cheapest
from runner.memory.terms import GIB, Phase
from runner.memos import Table

ACTOR_FLAGS = (
    "tensor-model-parallel-size",
    "pipeline-model-parallel-size",
    "expert-model-parallel-size",
    "expert-tensor-parallel-size",
)
ENGINE_FLAGS = ("rollout-num-gpus-per-engine", "sglang-mem-fraction-static")

# P10, P11 and P12 read one estimate of a cell: made by the first of them, a third of their cost
_ESTIMATES: Table[tuple[int, int], tuple[Cell, Layout, Estimate]] = Table(
    "runner.check.memory._ESTIMATES",
    "pure",
    "a cell's estimate as laid out, by the identity of the cell and its layout (both frozen), which"
    " are kept with it: neither id names another object while the estimate is kept",
    64,
)


@rule("P10")
def cannot_fit(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """What must be on a GPU (weights, main grads, optimizer state; an engine's weights within its static
    memory) is over its memory: the cell cannot start.

    Source: run-matrix's memory estimate (runner/memory/), after Megatron-LM
    megatron/training/theoretical_memory_usage.py and SGLang's ModelRunner.profile_max_num_token; the
    hardware profile's memory_gb (matrices/hardware/)
    """
    found = _estimate(cell, facts)
    static = _static_short(cell, facts, found)
    if static is not None:
        yield static
    for phase in found.phases:
        if phase.name == "rollout" and static is not None:
            continue  # the engine cannot start: said above
        if phase.lower_bound > found.memory:
            yield problem(
                "P10",
                cell,
                _flags(phase),
                f"{phase.name} cannot fit a GPU of {found.gpu}: at least {_gb(phase.lower_bound)} GB"
                f" ({_summary(phase, lower=True)}) against {_gb(found.memory)} GB",
                cheapest(cell, facts, phase.name),
            )
            return


@rule("P11")
def estimated_over(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The memory estimate, its allowances included, is over the GPU: a warning with the margin.

    Source: run-matrix's memory estimate (runner/memory/), after Megatron-LM
    megatron/training/theoretical_memory_usage.py and SGLang's ModelRunner.profile_max_num_token; the
    hardware profile's memory_gb (matrices/hardware/)
    """
    found = _estimate(cell, facts)
    if any(p.lower_bound > found.memory for p in found.phases) or _static_short(cell, facts, found):
        return  # P10 says it
    heaviest = found.heaviest
    if heaviest is None or heaviest.estimate <= found.memory:
        return
    yield problem(
        "P11",
        cell,
        _flags(heaviest),
        f"{heaviest.name} is estimated over a GPU of {found.gpu}"
        f" by {_gb(heaviest.estimate - found.memory)} GB:"
        f" {_gb(heaviest.estimate)} GB ({_summary(heaviest, lower=False)}) against {_gb(found.memory)} GB",
        "an estimate, not a certainty: `run-matrix explain CELL --memory` shows each term and its source; "
        + cheapest(cell, facts, heaviest.name),
        severity="warning",
    )


@rule("P12")
def pool_short(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """An engine's KV pool holds fewer tokens than one group of samples: SGLang retracts and re-queues
    requests.

    Source: runner/memory/kv.py, after SGLang's ModelRunner.profile_max_num_token and
    ServerArgs._handle_gpu_memory_settings
    """
    found = _estimate(cell, facts)
    held = found.capacity
    if held is None or not held.group or held.tokens >= held.group or held.tokens == 0:
        return
    yield problem(
        "P12",
        cell,
        ("sglang-mem-fraction-static", "rollout-max-response-len", "n-samples-per-prompt"),
        f"an engine's KV pool holds {held.tokens:,} tokens, less than one group of samples: {held.group:,}"
        f" ({held.demand_from.split('; a group: ')[-1]}); {held.cell.bytes:,.0f} B a token",
        "SGLang retracts and re-queues requests it cannot hold: raise sglang-mem-fraction-static, give an"
        " engine more GPUs, or an fp8 KV cache (sglang-kv-cache-dtype fp8_e4m3)",
        severity="warning",
    )


def _estimate(cell: Cell, facts: Layout) -> Estimate:
    key = (id(cell), id(facts))
    kept = _ESTIMATES.get(key) or _ESTIMATES.put(key, (cell, facts, estimate(cell, facts)))
    return kept[2]


def _static_short(cell: Cell, facts: Layout, found: Estimate) -> Problem | None:
    """P10 when an engine's weights alone are over its static memory: SGLang stops at start."""
    static = found.static
    if static is None or static.weights <= static.budget:
        return None
    return problem(
        "P10",
        cell,
        ENGINE_FLAGS,
        f"a rollout engine's weights do not fit its static memory on {found.gpu}: {_gb(static.weights)} GB"
        f" ({static.weights_from}) against {static.fraction_from} x {_gb(found.memory)} GB"
        f" = {_gb(static.budget)} GB",
        'SGLang stops at start ("Not enough memory"): ' + cheapest(cell, facts, "static"),
    )


def _flags(phase: Phase) -> tuple[str, ...]:
    holders = {t.holder for t in phase.terms if t.lower}
    return (
        ACTOR_FLAGS + ENGINE_FLAGS
        if holders == {"actor", "engine"}
        else ENGINE_FLAGS
        if holders == {"engine"}
        else ACTOR_FLAGS
    )


def _summary(phase: Phase, lower: bool) -> str:
    shown = [t for t in phase.terms if t.bytes and (t.lower or not lower)]
    shown.sort(key=lambda t: -(t.bytes or 0.0))
    return ", ".join(f"{t.holder} {t.name} {_gb(t.bytes or 0.0)}" for t in shown[:4])


def _gb(value: float) -> str:
    return f"{value / GIB:.1f}"
