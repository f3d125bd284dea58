"""selection: ``-k EXPR`` over cells — an id, an id glob, or a small boolean expression.

``rocm/*`` and ``*[fp8_rollout=true]`` are globs (``*`` and ``?`` only; brackets are
literal). ``fp8_rollout and not rocm`` is evaluated by simpleeval: names are the cell's axes,
plus its hardware name, platform and vendor as true (``h200``, ``cuda``, ``nvidia``). A name
that no cell knows is an error; a selection that matches nothing is an error.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

import simpleeval

from runner.cell import Cell
from runner.errors import UsageError, did_you_mean


def select(cells: Sequence[Cell], expression: str) -> list[Cell]:
    exact = [cell for cell in cells if cell.id == expression]
    if exact:
        chosen = exact
    elif re.search(r"[/*?]", expression):
        pattern = re.compile(
            ".*".join(".".join(map(re.escape, part.split("?"))) for part in expression.split("*"))
        )
        chosen = [cell for cell in cells if pattern.fullmatch(cell.id)]
    else:
        chosen = _evaluated(cells, expression)
    if not chosen:
        raise UsageError(
            f"-k {expression!r} matches none of {len(cells)} cells: {', '.join(c.id for c in cells)}"
        )
    return chosen


def names(cell: Cell) -> dict[str, Any]:
    return {
        **cell.axes,
        cell.profile.name: True,
        cell.profile.platform: True,
        cell.profile.vendor: True,
    }


def _evaluated(cells: Sequence[Cell], expression: str) -> list[Cell]:
    known = {name for cell in cells for name in names(cell)}
    try:
        tree = simpleeval.SimpleEval().parse(expression)
    except SyntaxError as exc:
        raise UsageError(f"-k {expression!r} is not an expression: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in known | {"True", "False"}:
            hint = did_you_mean(node.id, known) or f"known: {', '.join(sorted(known))}"
            raise UsageError(f"-k {expression!r}: no cell knows {node.id!r} ({hint})")
    chosen = []
    for cell in cells:
        evaluator = simpleeval.SimpleEval(names={**dict.fromkeys(known), **names(cell)}, functions={})
        try:
            if evaluator.eval(expression, previously_parsed=tree):
                chosen.append(cell)
        except simpleeval.InvalidExpression as exc:
            raise UsageError(f"-k {expression!r}: {exc}") from None
    return chosen
