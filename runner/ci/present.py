"""A plan as a GitHub Actions ``strategy.matrix``, or as Markdown tables (one per runner class)."""

from __future__ import annotations

from typing import Any

from runner.ci.budget import hours
from runner.errors import UsageError, counted
from runner.results.markdown import escape
from schemas.ci_plan import CiPlan, LeftOut

GITHUB_MAX_JOBS = 256  # GitHub Actions: "a matrix can generate a maximum of 256 jobs per workflow run"


def github(plan: CiPlan) -> dict[str, Any]:
    """``{"include": [{"runs-on", "shard", "cells"}, ...]}``: one job per shard, through ``fromJSON``."""
    if len(plan.shards) > GITHUB_MAX_JOBS:
        raise UsageError(
            f"the plan has {len(plan.shards)} shards; GitHub Actions runs at most {GITHUB_MAX_JOBS} jobs "
            "of one matrix: lower the counts in the runners file, or plan the specs in parts "
            "(one matrix job each)"
        )
    return {"include": [{"runs-on": s.runs_on, "shard": s.shard, "cells": s.cells} for s in plan.shards]}


def markdown(plan: CiPlan) -> str:
    lines = [f"## CI plan: {counted(len(plan.cells), 'cell')} on {counted(len(plan.shards), 'runner')}", ""]
    budget = f" (budget: {plan.budget_gpu_hours:g})" if plan.budget_gpu_hours is not None else ""
    lines.append(f"GPU-hours: {hours(plan.gpu_hours)}{budget}, retries counted at their maximum")
    lines += _changed(plan)
    for each in plan.classes:
        lines += [
            "",
            f"### `{escape(each.label)}`: {each.hardware}, {each.gpus} GPUs each, "
            f"{counted(each.count, 'runner')}",
        ]
        if not each.shards:
            lines.append("no cells")
            continue
        lines += ["", "| shard | load (s) | cells |", "|---:|---:|---|"]
        for number in each.shards:
            shard = plan.shards[number]
            cells = ", ".join(f"`{escape(c)}`" for c in shard.cells)
            lines.append(f"| {shard.shard} | {shard.load} | {cells} |")
        idle = each.count - len(each.shards)
        lines += [
            "",
            f"{counted(each.cells, 'cell')}, {each.total} s in all; bound: longest {each.longest} s + "
            f"{each.total} s / {each.count} = {each.bound:g} s"
            + (f"; {counted(idle, 'runner')} idle" if idle else ""),
        ]
    lines += _left("Cells no runner can take", plan.unplaced)
    lines += _left("Not planned", plan.left_out)
    return "\n".join(lines) + "\n"


def _left(title: str, cells: list[LeftOut]) -> list[str]:
    if not cells:
        return []
    rows = [f"| `{escape(c.id)}` | {c.hardware} | {c.gpus} | {escape(c.reason)} |" for c in cells]
    return ["", f"### {title}", "", "| cell | hardware | GPUs | why |", "|---|---|---:|---|", *rows]


def _changed(plan: CiPlan) -> list[str]:
    """Why each cell was selected, when a change selected them."""
    chosen = [c for c in plan.cells if c.changed]
    if not chosen:
        return []
    lines = ["", "| cell | selected by |", "|---|---|"]
    return lines + [f"| `{escape(c.id)}` | {escape('; '.join(c.changed))} |" for c in chosen]
