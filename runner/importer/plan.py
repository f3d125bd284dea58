"""plan: the files an import writes, as data — the spec, and one component per adjusted cell.

The spec holds what the default cell needs (all of it, or, with a base, what differs from the
base); each other cell that still differs gets an ``adjust`` entry matching its non-default axis
values, with a component overlay holding the rest. ``texts`` writes them as YAML, with a
header, and comments that name the script variable a group's flags came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.cells.matrix import show
from runner.importer.notes import Note
from runner.importer.residual import Edit
from runner.spec import emit, locate
from runner.spec.load import DELETE, Key
from schemas.matrix import AxisValue

Combo = dict[str, AxisValue]
ORDER = (
    "extends",
    "description",
    "miles_version",
    "hardware",
    "model",
    "cluster",
    "launch",
    "wandb",
    "ci",
    "matrix",
    "prepare",
    "args",
    "env",
    "verify",
    "expect",
)
SKIP_ENTRY = "ci-disabled"  # the matrix.adjust entry that skips every cell (a test miles' CI disables)


# mutable: fit.grow and ci_block add to it, an edit at a time, until every cell renders its target
@dataclass
class ImportPlan:
    stem: str  # names the spec's components: its path in the matrices tree, "-" for "/"
    spec: Edit
    axes: dict[str, list[AxisValue]] = field(default_factory=dict)  # only those the spec must write
    adjust: dict[str, Combo] = field(default_factory=dict)  # entry name -> match
    components: dict[str, Edit] = field(default_factory=dict)  # entry name -> overlay data
    files: dict[str, str] = field(default_factory=dict)  # entry name -> component file name
    sources: dict[str, str] = field(default_factory=dict)  # flag -> the script variable it came from
    taken: set[str] = field(default_factory=set)  # adjust entry names the base already uses
    skip: Any = None  # every cell's skip ({reason, expires}), or DELETE to drop a base's
    skips: dict[str, tuple[Combo, Any]] = field(default_factory=dict)  # entry -> (match, skip): some cells'

    def add(self, combo: Combo, defaults: Combo, edit: Edit) -> None:
        """Merge ``edit`` into the file that decides this cell: the spec, or the cell's component."""
        match = matched(combo, defaults)
        if not match:
            merge(self.spec, edit)
            return
        values = "-".join(f"{axis}-{show(value)}" for axis, value in match.items())
        name = values if values not in self.taken else f"{self.stem}-{values}"
        self.adjust[name] = match
        self.files[name] = f"{self.stem}-{values}.yaml"
        merge(self.components.setdefault(name, {}), edit)

    def component_file(self, name: str) -> str:
        return self.files[name]


def matched(combo: Combo, defaults: Combo) -> Combo:
    """What the component of this cell matches on: its axes off their default (none: the spec's own
    cell, whose file, the spec, every cell reads)."""
    return {axis: value for axis, value in combo.items() if not _same_value(value, defaults[axis])}


def _same_value(a: AxisValue, b: AxisValue) -> bool:
    return a == b and type(a) is type(b)


def merge(data: Edit, edit: Edit) -> None:
    """Later wins; deleting a key this file sets just drops it (a base's key then gets ``!delete``)."""
    for name, value in edit.items():
        old = data.get(name)
        if isinstance(value, dict) and isinstance(old, dict):
            merge(old, value)
        elif value is DELETE and name in data and old is not DELETE:
            del data[name]
        else:
            data[name] = value


def texts(
    plan: ImportPlan, spec: Path, components: dict[str, Path], header: list[str], notes: list[Note]
) -> dict[Path, str]:
    """The YAML of every file, components named by ``components`` (entry -> path)."""
    data = dict(plan.spec)
    if plan.axes or plan.adjust or plan.skip is not None or plan.skips:
        data["matrix"] = _matrix(plan, spec, components)
    ordered = {key: _pruned(data[key]) for key in sorted(data, key=_rank) if _pruned(data[key]) != {}}
    schema = _schema_line(spec)
    lines = [*header, *(f"note: {_note(n)}" for n in notes)]
    written = {spec: emit.dump(ordered, _comments(ordered, plan.sources), [*schema, *lines])}
    for name, path in components.items():
        body = {
            key: _pruned(value)
            for key, value in sorted(plan.components[name].items(), key=lambda kv: _rank(kv[0]))
        }
        match = ", ".join(f"{axis}={show(value)}" for axis, value in plan.adjust[name].items())
        written[path] = emit.dump(
            {k: v for k, v in body.items() if v != {}},
            _comments(body, plan.sources),
            [*schema, f"{plan.stem} where {match}: what differs from the default cell ({header[0]})"],
        )
    return written


def _matrix(plan: ImportPlan, spec: Path, components: dict[str, Path]) -> Edit:
    matrix: Edit = {}
    if plan.axes:
        matrix["axes"] = {axis: list(values) for axis, values in plan.axes.items()}
    if plan.adjust:
        matrix["adjust"] = {
            name: {"match": match, "overlay": os.path.relpath(components[name], spec.parent)}
            for name, match in plan.adjust.items()
        }
    for name, (match, skip) in plan.skips.items():
        matrix.setdefault("adjust", {})[name] = {"match": match, "skip": skip}
    if plan.skip is not None:  # no match: every cell
        skip = plan.skip if plan.skip is DELETE else {"skip": plan.skip}
        matrix["adjust"] = {**matrix.get("adjust", {}), SKIP_ENTRY: skip}
    return matrix


def _rank(key: str) -> int:
    return ORDER.index(key) if key in ORDER else len(ORDER)


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v != {}}
    return value


def _comments(data: Edit, sources: dict[str, str]) -> dict[Key, str]:
    """Above the first flag of each run from one variable, when the group is not named after it."""
    comments: dict[Key, str] = {}
    for group, flags in (data.get("args") or {}).items():
        written = {name: sources.get(name, "") for name, value in flags.items() if value is not DELETE}
        previous = None
        for name, source in written.items():
            if source != previous and (len(set(written.values())) > 1 or source != f"{group}_args"):
                comments[("args", group, name)] = (
                    f"from {source}" if source else "written inline in train_args"
                )
            previous = source
    return comments


def with_schema_line(text: str, spec: Path) -> str:
    """``text`` with the editors' schema line for a file at ``spec`` (where it was written elsewhere)."""
    lines = text.splitlines(keepends=True)
    if lines and lines[0].startswith(SCHEMA_LINE):
        lines = lines[1:]
    return "".join([*(f"# {line}\n" for line in _schema_line(spec)), *lines])


SCHEMA_LINE = "# yaml-language-server: $schema="


def _schema_line(spec: Path) -> list[str]:
    """For editors, when the spec lies in run-matrix's own tree (elsewhere the path would not travel)."""
    schema = locate.PROJECT / "schemas" / "spec.schema.json"
    if not schema.is_file() or not spec.resolve().is_relative_to(locate.PROJECT):
        return []
    return [f"yaml-language-server: $schema={os.path.relpath(schema, spec.resolve().parent)}"]


def _note(note: Note) -> str:
    return (
        f"{' '.join(note.message.split())} ({note.at.file.name}{f':{note.at.line}' if note.at.line else ''})"
    )
