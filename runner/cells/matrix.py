"""matrix: one spec's ``matrix:`` block -> the axis values of each cell. Pure.

Order, named: the product of the axes (``zip:`` groups vary together, not crossed), then
``exclude`` (a partial match removes cells), then ``include`` (only ever adds whole cells; it
never edits one), then the size cap. ``adjust`` entries are applied per cell by the pipeline.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from runner.errors import Location, SpecError, did_you_mean
from runner.spec.load import Key
from schemas.matrix import AxisValue, Matrix

Combo = dict[str, AxisValue]
Where = Callable[[Key], Location]


MAX_CELLS = 100_000  # whatever max_cells says: expanding and resolving more takes minutes
MAX_RULES = 1_000  # entries of exclude and of include: each is compared with every cell


def expand(matrix: Matrix, where: Where) -> list[Combo]:
    for name, rules in (("exclude", matrix.exclude), ("include", matrix.include)):
        if len(rules) > MAX_RULES:
            raise _error(
                name, f"{len(rules)} entries, more than {MAX_RULES:,}", where, "use fewer, broader entries"
            )
    groups = _groups(matrix, where)
    _cap(math.prod(len(group) for group in groups), matrix, where, "the product of its axes")
    combos = [_merge(choice, matrix) for choice in itertools.product(*groups)]
    excluded = _checked(matrix.exclude, matrix, "exclude", where)
    combos = [combo for combo in combos if not any(same(combo, rule) for rule in excluded)]
    for index, extra in enumerate(matrix.include):
        combos.append(_included(extra, index, combos, matrix, where))
    _cap(len(combos), matrix, where, "its cells after include")
    if not combos:
        raise _error(
            "exclude", "exclude removes every cell: the spec would test nothing", where, "exclude fewer cells"
        )
    return combos


def cell_id(name: str, combo: Mapping[str, AxisValue], matrix: Matrix) -> str:
    """``rocm/glm5-async[fp8_rollout=true]``: the values that differ from each axis's first.

    An axis's first value is its default, left out of the id: the cell with every default is
    the spec's own name (``rocm/glm5-async``), so adding an axis keeps the existing id.
    """
    shown = [f"{axis}={show(value)}" for axis, value in combo.items() if not _is_default(axis, value, matrix)]
    return f"{name}[{','.join(shown)}]" if shown else name


def _is_default(axis: str, value: AxisValue, matrix: Matrix) -> bool:
    values = matrix.axes.get(axis, [])
    return bool(values) and _equal(values[0], value)


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _groups(matrix: Matrix, where: Where) -> list[list[Combo]]:
    """Each zip group, and each other axis alone, as the partial combos it contributes."""
    zipped = _zip_groups(matrix, where)
    groups: list[list[Combo]] = []
    for axis, values in matrix.axes.items():
        _distinct_values(axis, values, where)
        if axis not in zipped:
            groups.append([{axis: value} for value in values])
        elif zipped[axis][0] == axis:
            names = zipped[axis]
            rows = zip(*(matrix.axes[name] for name in names), strict=True)
            groups.append([dict(zip(names, row, strict=True)) for row in rows])
    return groups


def _distinct_values(axis: str, values: list[AxisValue], where: Where) -> None:
    """An axis without values would silently drop every cell; a repeated value repeats ids."""
    key = ("matrix", "axes", axis)
    if not values:
        raise SpecError.one(
            "matrix",
            f"axis {axis!r} has no values: the matrix would have no cells",
            key=".".join(key),
            at=[where(key)],
            hint="give it at least one value (the first is the default), or delete the axis with !delete",
        )
    for index, value in enumerate(values):
        if any(_equal(value, earlier) for earlier in values[:index]):
            raise SpecError.one(
                "matrix",
                f"axis {axis!r} lists {show(value)} twice: two cells would have one id",
                key=".".join(key),
                at=[where(key)],
                hint="list each value once",
            )


def _zip_groups(matrix: Matrix, where: Where) -> dict[str, list[str]]:
    """axis -> its zip group, after checking the groups name axes once and pair up evenly."""
    zipped: dict[str, list[str]] = {}
    for group in matrix.zip:
        for axis in group:
            _known_axis(axis, matrix, ("matrix", "zip"), where)
            if axis in zipped:
                raise _error(
                    "zip", f"axis {axis!r} is in two zip groups", where, "an axis varies with one group"
                )
            zipped[axis] = group
        lengths = {axis: len(matrix.axes[axis]) for axis in group}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{axis} has {n}" for axis, n in lengths.items())
            raise _error(
                "zip",
                f"zipped axes must have as many values each: {shown}",
                where,
                "give each zipped axis the same number of values",
            )
    return zipped


def _merge(parts: Iterable[Mapping[str, AxisValue]], matrix: Matrix) -> Combo:
    """One cell's axis values, in the order the axes are declared (ids depend on it)."""
    combo: Combo = {}
    for part in parts:
        combo.update(part)
    return {axis: combo[axis] for axis in matrix.axes}


def same(combo: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    """A partial match: every axis of ``rule`` has its value in ``combo`` (``1`` is not ``true``)."""
    return all(axis in combo and _equal(combo[axis], value) for axis, value in rule.items())


def _equal(a: Any, b: Any) -> bool:
    return bool(a == b and type(a) is type(b))


def _checked(rules: list[Combo], matrix: Matrix, name: str, where: Where) -> list[Combo]:
    for rule in rules:
        for axis in rule:
            _known_axis(axis, matrix, ("matrix", name), where)
    return rules


def _included(
    extra: dict[str, AxisValue], index: int, combos: list[Combo], matrix: Matrix, where: Where
) -> Combo:
    for axis in extra:
        _known_axis(axis, matrix, ("matrix", "include"), where)
    missing = [axis for axis in matrix.axes if axis not in extra]
    if missing:
        raise _error(
            "include",
            f"include entry {index + 1} gives no value for {', '.join(missing)}",
            where,
            "an include adds a whole cell: give every axis (use adjust: to change existing cells)",
        )
    combo = {axis: extra[axis] for axis in matrix.axes}
    if any(same(existing, combo) for existing in combos):
        shown = ", ".join(f"{axis}={show(value)}" for axis, value in combo.items())
        raise _error(
            "include",
            f"include entry {index + 1} is already a cell ({shown})",
            where,
            "include only adds cells; use adjust: to change one",
        )
    return combo


def _known_axis(axis: str, matrix: Matrix, key: Key, where: Where) -> None:
    if axis not in matrix.axes:
        raise SpecError.one(
            "matrix",
            f"{key[-1]} names {axis!r}, which is not an axis",
            key=".".join(key),
            at=[where(key)],
            hint=did_you_mean(axis, matrix.axes) or f"axes: {', '.join(matrix.axes) or '(none)'}",
        )


def _cap(size: int, matrix: Matrix, where: Where, what: str) -> None:
    if size > MAX_CELLS and matrix.max_cells > MAX_CELLS:
        raise SpecError.one(
            "budget",
            f"the matrix has {size:,} cells ({what}), more than run-matrix expands ({MAX_CELLS:,})",
            key="matrix",
            at=[where(("matrix",))],
            hint="split it into several specs; nothing is truncated",
        )
    if size > matrix.max_cells:
        axes = " x ".join(f"{len(v)} ({a})" for a, v in matrix.axes.items())
        raise SpecError.one(
            "matrix",
            f"the matrix has {size} cells ({what}: {axes}), more than max_cells {matrix.max_cells}",
            key="matrix",
            at=[where(("matrix",))],
            hint="remove values, exclude cells, or raise matrix.max_cells; nothing is truncated",
        )


def _error(name: str, message: str, where: Where, hint: str) -> SpecError:
    return SpecError.one("matrix", message, key=f"matrix.{name}", at=[where(("matrix", name))], hint=hint)
