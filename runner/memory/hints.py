"""hints: the cheapest change that makes a phase fit, tried on the estimate itself.

Candidates, cheapest first: what costs no GPUs (the optimizer's state on the CPU, full recompute, a
higher or lower mem fraction), then more GPUs to a group (EP, TP, PP of the actor; GPUs of an
engine), each only where miles and Megatron would accept the new count. The first whose phase fits
is named with its figure; if none does, the one that gets closest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.memory.estimate import Estimate, estimate
from runner.memory.terms import GIB


@dataclass(frozen=True)
class Candidate:
    """One change a hint may propose: in words, the layout and the flags it gives."""

    change: str  # in words, as a flag
    facts: Layout
    flags: dict[str, Any]


def cheapest(cell: Cell, facts: Layout, phase: str) -> str:
    """A hint naming the cheapest change under which ``phase`` fits (``static``: an engine's
    weights within its static memory)."""
    best: tuple[float, str] | None = None
    for candidate in candidates(cell, facts, phase):
        found = estimate(cell, candidate.facts, candidate.flags)
        over = _over(found, phase)
        if over is None:
            continue
        if over <= 0:
            return f"the cheapest change that fits: {candidate.change}"
        if best is None or over < best[0]:
            best = over, candidate.change
    if best is None:
        return "no single change of parallelism, offload or recompute was found to help"
    return f"no single change fits; {best[1]} comes closest ({best[0] / GIB:.1f} GB over)"


def _over(found: Estimate, phase: str) -> float | None:
    """By how much the phase is over: its lower bound when that is, else its estimate."""
    if phase == "static":
        return None if found.static is None else found.static.weights - found.static.budget
    for p in found.phases:
        if p.name == phase:
            return (p.lower_bound if p.lower_bound > found.memory else p.estimate) - found.memory
    return None


def candidates(cell: Cell, facts: Layout, phase: str) -> Iterator[Candidate]:
    if phase in ("training", "weight update"):
        yield from _actor(cell, facts)
    if phase in ("rollout", "weight update", "static"):
        yield from _engine(cell, facts, smaller=phase == "rollout")


def _actor(cell: Cell, facts: Layout) -> Iterator[Candidate]:
    a = facts.actor
    if not cell.flag("optimizer-cpu-offload"):
        yield Candidate("--optimizer-cpu-offload", facts, {"optimizer-cpu-offload": True})
    if cell.flag("recompute-granularity") != "full":
        full = {"recompute-granularity": "full", "recompute-method": "uniform", "recompute-num-layers": 1}
        yield Candidate(
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1", facts, full
        )
    experts, layers = facts.model.experts or 0, facts.model.layers or 0
    heads, groups = facts.model.heads or 0, facts.model.query_groups or facts.model.heads or 0
    if experts and experts % (a.ep * 2) == 0 and a.world % (a.ep * 2 * a.etp * a.pp) == 0:
        yield _actor_change(facts, "expert-model-parallel-size", "ep", a.ep * 2)
    tp_fits = a.tp * 2 <= facts.gpus_per_node and a.world % (a.tp * 2 * a.pp * a.cp) == 0
    if tp_fits and heads % (a.tp * 2) == 0 and groups % (a.tp * 2) == 0:
        yield _actor_change(facts, "tensor-model-parallel-size", "tp", a.tp * 2)
    if layers % (a.pp * 2) == 0 and a.world % (a.tp * a.pp * 2 * a.cp) == 0:
        yield _actor_change(facts, "pipeline-model-parallel-size", "pp", a.pp * 2)


def _actor_change(facts: Layout, flag: str, field: str, value: int) -> Candidate:
    was = getattr(facts.actor, field)
    actor = replace(facts.actor, **{field: value})
    return Candidate(f"--{flag} {value} (was {was})", replace(facts, actor=actor), {flag: value})


def _engine(cell: Cell, facts: Layout, smaller: bool) -> Iterator[Candidate]:
    e = facts.engine
    fraction = cell.flag("sglang-mem-fraction-static")
    given = float(str(fraction)) if fraction is not None else None
    for value in (0.6, 0.5) if facts.colocate and smaller else ():  # a smaller engine leaves the actor room
        if given is None or given > value:
            yield Candidate(
                f"--sglang-mem-fraction-static {value}", facts, {"sglang-mem-fraction-static": value}
            )
    for value in () if smaller else (0.8, 0.85, 0.9):  # a larger static share holds the weights
        if given is None or given < value:
            yield Candidate(
                f"--sglang-mem-fraction-static {value}", facts, {"sglang-mem-fraction-static": value}
            )
    if e.tp * 2 <= facts.rollout_gpus and facts.rollout_gpus % (e.tp * 2) == 0:
        engine = replace(e, tp=e.tp * 2, ep=e.ep * 2 if e.ep == e.tp else e.ep)
        change = f"--rollout-num-gpus-per-engine {e.tp * 2} (was {e.tp})"
        yield Candidate(change, replace(facts, engine=engine), {"rollout-num-gpus-per-engine": e.tp * 2})
