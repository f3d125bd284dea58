"""selection: which cells a command line means — cell ids, and ``-k EXPR`` over cells.

A cell id is ``SPEC[axis=value,...]``: the cell whose axes have the given values and whose
other axes are at their defaults (so ``[fp8_rollout=false]`` is the default cell). An axis
or value that no cell has is an error with a did-you-mean.

``-k``: ``rocm/*`` and ``*[fp8_rollout=true]`` are globs (``*`` and ``?`` only; brackets are
literal). ``fp8_rollout and not rocm`` is evaluated by the budgeted evaluator of
``runner.spec.expressions``: names are the cell's axes, plus its hardware name, platform and vendor
as true (``h200``, ``cuda``, ``nvidia``). An empty expression, a name that no cell knows, an
expression that fails, and a selection that matches nothing are errors.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

import simpleeval

from runner.cells.cell import Cell
from runner.cells.matrix import show
from runner.errors import UsageError, counted, did_you_mean
from runner.spec import expressions


def by_id(cells: Sequence[Cell], name: str) -> Cell:
    """The one cell of ``cells`` (one spec's) that the id ``name`` (``spec[axis=value]``) means."""
    wanted = _pairs(name)
    for cell in cells:
        own = _pairs(cell.id)
        if all(
            show(cell.axes.get(axis)) == value for axis, value in wanted.items() if axis in cell.axes
        ) and (set(own) <= set(wanted) and set(wanted) <= set(cell.axes)):
            return cell
    raise UsageError(f"no cell {name!r}: {_why_none(cells, wanted)}")


def _matches(cell: Cell, wanted: dict[str, str]) -> bool:
    """Every given axis has its value; every other axis is at its default (not in the id)."""
    if not set(wanted) <= set(cell.axes) or not set(_pairs(cell.id)) <= set(wanted):
        return False
    return all(show(cell.axes[axis]) == value for axis, value in wanted.items())


def _pairs(name: str) -> dict[str, str]:
    spec, bracket, rest = name.partition("[")
    if not bracket:
        return {}
    if not rest.endswith("]"):
        raise UsageError(f"cell id {name!r}: the [ is never closed (write {spec}[axis=value,...])")
    pairs: dict[str, str] = {}
    for part in filter(None, rest[:-1].split(",")):
        axis, equals, value = part.partition("=")
        if not equals or not axis.strip():
            raise UsageError(f"cell id {name!r}: {part!r} is not axis=value")
        if axis.strip() in pairs:
            raise UsageError(f"cell id {name!r}: axis {axis.strip()!r} is given twice")
        pairs[axis.strip()] = value.strip()
    return pairs


def _why_none(cells: Sequence[Cell], wanted: dict[str, str]) -> str:
    values: dict[str, list[str]] = {}
    for cell in cells:
        for axis, value in cell.axes.items():
            values.setdefault(axis, [])
            if show(value) not in values[axis]:
                values[axis].append(show(value))
    ids = ", ".join(cell.id for cell in cells)
    for axis, value in wanted.items():
        if axis not in values:
            hint = did_you_mean(axis, values) or f"its axes: {', '.join(values) or '(none)'}"
            return f"the spec has no axis {axis!r} ({hint}); its cells: {ids}"
        if value not in values[axis]:
            hint = did_you_mean(value, values[axis])
            hint = f"; {hint}" if hint else ""
            return f"{axis} has the values {', '.join(values[axis])}, not {value!r}{hint}; its cells: {ids}"
    return f"no cell has that combination (excluded?); its cells: {ids}"


def select(cells: Sequence[Cell], expression: str) -> list[Cell]:
    if not expression.strip():
        raise UsageError(
            f"-k {expression!r} selects nothing: give a cell id, an id glob (rocm/*) "
            "or an expression over axis values (fp8_rollout and not rocm)"
        )
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
            f"-k {expression!r} matches none of {counted(len(cells), 'cell')}:"
            f" {', '.join(c.id for c in cells)}"
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
        tree = expressions.parse(expression)
    except SyntaxError as exc:
        raise UsageError(f"-k {expression!r} is not an expression: {exc.msg}") from None
    except ValueError as exc:  # too long, or a call
        raise UsageError(f"-k {expression!r}: {exc}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in known | {"True", "False"}:
            hint = did_you_mean(node.id, known) or f"known: {', '.join(sorted(known))}"
            raise UsageError(f"-k {expression!r}: no cell knows {node.id!r} ({hint})")
    chosen = []
    for cell in cells:
        evaluator = expressions.evaluator(names={**dict.fromkeys(known), **names(cell)})
        try:
            if evaluator.eval(expression, previously_parsed=tree):
                chosen.append(cell)
        except (simpleeval.InvalidExpression, ArithmeticError, TypeError, ValueError) as exc:
            raise UsageError(f"-k {expression!r} fails on {cell.id}: {exc}") from None
    return chosen
