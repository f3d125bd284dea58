"""fit: find the smallest files whose every cell resolves to its target, using run-matrix itself.

The files are staged beside where they will be written (hidden names, removed afterwards), so
``extends:``, component paths and hardware profiles resolve as they will for the user. Each
pass builds every cell with the real pipeline and adds the residual of the first cell that
still differs — to the spec for the default cell, else to that cell's component. References
in a base (``${args.misc.actor-num-gpus-per-node}``) are followed for free: a value that shifts
because of an earlier edit shows up in the next pass. With a base, the keys added only so the
spec could resolve are dropped again where the base already gives the same.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from runner import pipeline
from runner.cell import Cell
from runner.errors import Location, Problem, RunMatrixError, SpecError
from runner.importer.plan import Combo, Plan
from runner.importer.residual import residual, skeleton
from runner.importer.target import Target
from runner.load import DELETE

MAX_PASSES = 64
T = TypeVar("T")
Texts = Callable[[Plan, Path, dict[str, Path]], dict[Path, str]]


def _all(cells: list[Cell]) -> list[Cell]:
    return cells


@dataclass(frozen=True)
class Layout:
    """Where the files go: the spec, and the folder of its components."""

    spec: Path
    components: Path

    def component(self, plan: Plan, name: str) -> Path:
        return self.components / plan.component_file(name)


def grow(
    plan: Plan, cells: list[tuple[Combo, Target]], hardware: str | None, layout: Layout, render: Texts
) -> None:
    """Grow ``plan`` until each cell resolves to its target."""
    defaults = cells[0][0]
    ordered = sorted(cells, key=lambda cell: sum(v != defaults[a] for a, v in cell[0].items()))
    own_steps = {name for _, target in cells for name in target.prepare}
    plan.spec = {**skeleton(cells[0][1], hardware), **plan.spec}
    for _ in range(MAX_PASSES):
        built = staged(plan, layout, render, _all)
        pending = _first_difference(built, ordered, hardware, own_steps)
        if pending is None:
            break
        combo, edit = pending
        plan.add(combo, defaults, edit)
    else:
        raise RunMatrixError("run-matrix import did not converge on a spec; please report it with the script")
    if "extends" in plan.spec:
        _drop_redundant(plan, layout, render, ordered, hardware, own_steps)


def _first_difference(
    built: list[Cell], ordered: list[tuple[Combo, Target]], hardware: str | None, own: set[str]
) -> tuple[Combo, dict[str, Any]] | None:
    for combo, target in ordered:
        edit = residual(cell_of(built, combo).spec, target, hardware, own)
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
    plan: Plan,
    layout: Layout,
    render: Texts,
    ordered: list[tuple[Combo, Target]],
    hardware: str | None,
    own: set[str],
) -> None:
    """Keys of the skeleton the base already gives: dropped when every cell stays on target."""
    for key in ("hardware", "model", "cluster", "launch"):
        if key not in plan.spec or plan.spec[key] is DELETE:
            continue
        kept = plan.spec.pop(key)
        candidate: list[Cell] | None
        try:
            candidate = staged(plan, layout, render, _all)
        except SpecError:
            candidate = None
        if candidate is None or _first_difference(candidate, ordered, hardware, own) is not None:
            plan.spec[key] = kept


def staged(plan: Plan, layout: Layout, render: Texts, then: Callable[[list[Cell]], T]) -> T:
    """``then`` of every cell of the plan, built by the pipeline from files staged under hidden names."""
    with stage(plan, layout, render) as spec:
        return then(pipeline.cells(spec))


def staged_problems(
    plan: Plan, layout: Layout, render: Texts, check: Callable[[list[Cell]], list[Problem]]
) -> list[Problem]:
    """``check`` of every cell, its problems naming the files as they will be written."""
    moved: dict[Path, Path] = {}
    with stage(plan, layout, render, moved) as spec:
        return [rename(problem, moved) for problem in check(pipeline.cells(spec))]


@contextmanager
def stage(plan: Plan, layout: Layout, render: Texts, moved: dict[Path, Path] | None = None) -> Iterator[Path]:
    token = secrets.token_hex(4)  # a fresh name each time: the loader caches files by path
    spec = layout.spec.with_name(f".{layout.spec.stem}.{token}.yaml")
    components = {name: layout.components / f".{plan.component_file(name)}.{token}" for name in plan.adjust}
    made = _missing_folders([spec.parent, *(p.parent for p in components.values())])
    written: list[Path] = []
    try:
        for folder in made:
            folder.mkdir()
        for path, text in render(plan, spec, components).items():
            path.write_text(text, encoding="utf-8")
            written.append(path)
        renamed = {spec: layout.spec, **{p: layout.component(plan, n) for n, p in components.items()}}
        if moved is not None:
            moved.update(renamed)
        with _renamed_locations(renamed):
            yield spec
    finally:
        for path in written:
            path.unlink(missing_ok=True)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def _missing_folders(folders: list[Path]) -> list[Path]:
    """The folders to create for ``folders``, parents first."""
    missing: list[Path] = []
    for folder in dict.fromkeys(f.resolve() for f in folders):
        for parent in [*reversed(folder.parents), folder]:
            if not parent.exists() and parent not in missing:
                missing.append(parent)
    return missing


@contextmanager
def _renamed_locations(moved: dict[Path, Path]) -> Iterator[None]:
    """Problems found in staged files name the files as they will be written."""
    try:
        yield
    except SpecError as exc:
        raise SpecError([rename(p, moved) for p in exc.problems]) from None


def rename(problem: Problem, moved: dict[Path, Path]) -> Problem:
    resolved = {a.resolve(): b for a, b in moved.items()}
    places = tuple(
        Location(resolved.get(loc.file.resolve(), loc.file), loc.line) for loc in problem.locations
    )
    message = problem.message
    for staged_path, final in moved.items():
        message = message.replace(staged_path.stem, final.stem).replace(str(staged_path), str(final))
    return replace(problem, locations=places, message=message)


def final_texts(plan: Plan, layout: Layout, render: Texts) -> dict[Path, str]:
    return render(plan, layout.spec, {name: layout.component(plan, name) for name in plan.adjust})
