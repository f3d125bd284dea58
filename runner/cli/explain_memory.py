"""explain --memory: a cell's memory per GPU, phase by phase, each term with its source (runner.memory)."""

from __future__ import annotations

from typing import Any

from runner import check
from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.cli.output import print_json
from runner.memory.estimate import Estimate, estimate
from runner.memory.terms import GIB, Phase

MEMORY_RULES = ("P10", "P11", "P12")


def show(cell: Cell, form: str) -> int:
    facts = layout(cell)
    found = estimate(cell, facts)
    verdicts = [p for p in check.run(cell) if p.rule in MEMORY_RULES]
    if form == "json":
        print_json(_json(cell, found, [str(p) for p in verdicts]))
        return 0
    print("\n".join(_text(cell, found, facts.colocate)))
    for problem in verdicts:
        print(problem)
    return 0


def _text(cell: Cell, found: Estimate, colocate: bool) -> list[str]:
    placed = "colocated: the actor and an engine share every GPU" if colocate else "actor and engines apart"
    lines = [
        f"{cell.id} on {found.gpu}: {_gb(found.memory)} GB a GPU (the profile's memory_gb), {placed}",
        f"model: {found.model}; estimated: {found.level}" + (f" ({found.why_not})" if found.why_not else ""),
    ]
    for phase in found.phases:
        lines += ["", *_phase(phase, found.memory)]
    if found.static is not None:
        s = found.static
        budget = f"engine static memory: {s.fraction_from} = {_gb(s.budget)} GB"
        lines += ["", f"{budget}; weights at least {_gb(s.weights)} GB"]
    if found.capacity is not None:
        c = found.capacity
        lines.append(f"KV pool: {c.tokens:,} tokens of {c.cell.bytes:,.0f} B ({c.cell.formula})")
        if c.group:
            lines.append(f"  one group: {c.group:,} tokens; in flight: {c.asked or 0:,} ({c.demand_from})")
    heaviest = found.heaviest
    if heaviest is not None:
        most = f"most: {heaviest.name}, {_gb(heaviest.estimate)} GB"
        lines += ["", f"{most} (at least {_gb(heaviest.lower_bound)} GB)"]
    lines.append("* counted in the lower bound (rule P10); the estimate adds the rest (P11)")
    return lines


def _phase(phase: Phase, memory: float) -> list[str]:
    margin = memory - phase.estimate
    head = f"{phase.name}: {_gb(phase.estimate)} GB of {_gb(memory)}, margin {_gb(margin)} GB — {phase.what}"
    lines = [head]
    for term in phase.terms:
        value = "  not estimated" if term.bytes is None else f"{term.gb:8.1f} GB{'*' if term.lower else ' '}"
        said = term.why_not if term.bytes is None else term.inputs
        lines.append(f"  {term.holder:<6} {term.name:<28}{value}  {said}")
        if term.source:
            lines.append(f"  {'':<6} {'':<28}{'':<12}from {term.source}")
    return lines


def _json(cell: Cell, found: Estimate, verdicts: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "cell": cell.id,
        "gpu": found.gpu,
        "memory_gb": round(found.memory / GIB, 2),
        "level": found.level,
        "model": found.model,
        "phases": [p.to_json(found.memory) for p in found.phases],
        "problems": verdicts,
    }
    if found.why_not:
        data["not_estimated"] = found.why_not
    if found.static is not None:
        data["engine_static"] = {
            "budget_gb": round(found.static.budget / GIB, 2),
            "weights_at_least_gb": round(found.static.weights / GIB, 2),
            "fraction": found.static.fraction_from,
        }
    if found.capacity is not None:
        c = found.capacity
        data["kv"] = {
            "tokens": c.tokens,
            "bytes_a_token": c.cell.bytes,
            "formula": c.cell.formula,
            "group_tokens": c.group,
            "in_flight_tokens": c.asked,
            "demand": c.demand_from,
        }
    return data


def _gb(value: float) -> str:
    return f"{value / GIB:.1f}"
