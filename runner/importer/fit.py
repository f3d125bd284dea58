"""fit: find the smallest files whose every cell resolves to its target, using run-matrix itself.

The files are composed in memory at the paths they will be written to, so ``extends:``, component
paths and hardware profiles resolve as they will for the user, and nothing is written. Each
pass builds every cell with the real pipeline and adds the residual of the first cell that
still differs — to the spec for the default cell, else to that cell's component — and of each
later cell until one that an edit of this pass may change (``_differences``). References
in a base (``${args.misc.actor-num-gpus-per-node}``) are followed for free: a value that shifts
because of an earlier edit shows up in the next pass. With a base, the keys added only so the
spec could resolve are dropped again where the base already gives the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import pipeline
from runner.cells.cell import Cell
from runner.cells.matrix import same
from runner.errors import RunMatrixError, SpecError
from runner.importer.plan import Combo, ImportPlan, matched
from runner.importer.residual import residual, skeleton
from runner.importer.target import Target
from runner.spec.load import DELETE

MAX_PASSES = 64
Texts = Callable[[ImportPlan, Path, dict[str, Path]], dict[Path, str]]
HardwareOf = Callable[[Combo], "str | None"]  # the hardware a cell must run on (None: any)


@dataclass(frozen=True)
class Destination:
    """Where the files go: the spec, and the folder of its components."""

    spec: Path
    components: Path

    def component(self, plan: ImportPlan, name: str) -> Path:
        return self.components / plan.component_file(name)


def grow(
    plan: ImportPlan,
    cells: list[tuple[Combo, Target]],
    hardware: HardwareOf,
    destination: Destination,
    render: Texts,
    miles_root: Path | None = None,
) -> None:
    """Grow ``plan`` until each cell resolves to its target (``miles_root``: the checkout a model type
    only it has is expanded from)."""
    defaults = cells[0][0]
    ordered = sorted(cells, key=lambda cell: sum(v != defaults[a] for a, v in cell[0].items()))
    own_steps = {name for _, target in cells for name in target.prepare}
    plan.spec = {**skeleton(cells[0][1], hardware(defaults)), **plan.spec}
    for _ in range(MAX_PASSES):
        built_cells = built(plan, destination, render, miles_root)
        pending = _differences(built_cells, ordered, hardware, own_steps, defaults)
        if not pending:
            break
        for combo, edit in pending:
            plan.add(combo, defaults, edit)
    else:
        raise RunMatrixError("run-matrix import did not converge on a spec; please report it with the script")
    if "extends" in plan.spec:
        _drop_redundant(plan, destination, render, ordered, hardware, own_steps, miles_root)


def _differences(
    built: list[Cell],
    ordered: list[tuple[Combo, Target]],
    hardware: HardwareOf,
    own: set[str],
    defaults: Combo,
) -> list[tuple[Combo, dict[str, Any]]]:
    """The edits that as many passes of one edit each would make, in their order: the residual of
    the first cell that differs, then of each later one, up to the first cell that an edit taken
    may change (one of its component, or of the spec, reaches every cell it matches). A cell no
    edit reaches is built as it was, so its residual still holds; one that is reached is left to
    the next pass, as is every cell after it, so the order of the edits, and of the components
    they make, is the one-edit passes' own."""
    edits: list[tuple[Combo, dict[str, Any]]] = []
    reach: list[Combo] = []  # what each edit taken matches
    for combo, target in ordered:
        if any(same(combo, match) for match in reach):
            break
        edit = residual(cell_of(built, combo).spec, target, hardware(combo), own)
        if edit:
            edits.append((combo, edit))
            reach.append(matched(combo, defaults))
    return edits


def _first_difference(
    built: list[Cell], ordered: list[tuple[Combo, Target]], hardware: HardwareOf, own: set[str]
) -> tuple[Combo, dict[str, Any]] | None:
    for combo, target in ordered:
        edit = residual(cell_of(built, combo).spec, target, hardware(combo), own)
        if edit:
            return combo, edit
    return None


def cell_of(built: list[Cell], combo: Combo) -> Cell:
    """The cell with these axis values (axes only a base has must sit at their first value)."""
    for cell in built:
        if all(
            cell.axes.get(axis) == value and type(cell.axes.get(axis)) is type(value)
            for axis, value in combo.items()
        ):
            return cell
    raise RunMatrixError(f"run-matrix import lost the cell {combo}; please report it with the script")


def _drop_redundant(
    plan: ImportPlan,
    destination: Destination,
    render: Texts,
    ordered: list[tuple[Combo, Target]],
    hardware: HardwareOf,
    own: set[str],
    miles_root: Path | None,
) -> None:
    """Keys of the skeleton the base already gives: dropped when every cell stays on target."""
    for key in ("hardware", "model", "cluster", "launch"):
        if key not in plan.spec or plan.spec[key] is DELETE:
            continue
        kept = plan.spec.pop(key)
        candidate: list[Cell] | None
        try:
            candidate = built(plan, destination, render, miles_root)
        except SpecError:
            candidate = None
        if candidate is None or _first_difference(candidate, ordered, hardware, own) is not None:
            plan.spec[key] = kept


def built(
    plan: ImportPlan, destination: Destination, render: Texts, miles_root: Path | None = None
) -> list[Cell]:
    """Every cell of the plan, built by the pipeline from its texts in memory, at the paths they will
    be written to (so ``extends:``, components and problems name the files as the user will see them)."""
    texts = final_texts(plan, destination, render)
    documents = {path.resolve(): text for path, text in texts.items()}
    return pipeline.cells(destination.spec, miles_root=miles_root, documents=documents)


def final_texts(plan: ImportPlan, destination: Destination, render: Texts) -> dict[Path, str]:
    components = {name: destination.component(plan, name) for name in plan.adjust}
    return render(plan, destination.spec, components)
