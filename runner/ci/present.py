"""A plan as a GitHub Actions ``strategy.matrix``, or as Markdown tables (one per runner class)."""

from __future__ import annotations

from typing import Any

from runner.markdown import escape
from schemas.ci_plan import CiPlan, LeftOut


def github(plan: CiPlan) -> dict[str, Any]:
    """``{"include": [{"runs-on", "shard", "cells"}, ...]}``: one job per shard, through ``fromJSON``."""
    return {"include": [{"runs-on": s.runs_on, "shard": s.shard, "cells": s.cells} for s in plan.shards]}


def markdown(plan: CiPlan) -> str:
    lines = [f"## CI plan: {len(plan.cells)} cells on {len(plan.shards)} runners"]
    for each in plan.classes:
        lines += ["", f"### `{escape(each.label)}`: {each.hardware}, {each.gpus} GPUs each, {each.count} runner{"s" if each.count != 1 else ""}"]
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
            f"{each.cells} cells, {each.total} s in all; bound: longest {each.longest} s + {each.total} s / "
            f"{each.count} = {each.bound:g} s" + (f"; {idle} runners idle" if idle else ""),
        ]
    lines += _left("Cells no runner can take", plan.unplaced)
    lines += _left("Not planned", plan.left_out)
    return "\n".join(lines) + "\n"


def _left(title: str, cells: list[LeftOut]) -> list[str]:
    if not cells:
        return []
    rows = [f"| `{escape(c.id)}` | {c.hardware} | {c.gpus} | {escape(c.reason)} |" for c in cells]
    return ["", f"### {title}", "", "| cell | hardware | GPUs | why |", "|---|---|---:|---|", *rows]
