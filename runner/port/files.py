"""The files a port writes: the overlay (extends the source, each change with its reason) and a
component per cell that needs more than the others, as YAML text through import's writer, which
reads back every value it writes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import schemas
from runner.cells.matrix import show
from runner.errors import display_path
from runner.port.rules import Change, PortPlan
from runner.spec import locate
from runner.spec.emit import Expression, dump
from runner.spec.load import DELETE

FOLDERS = {"nvidia": "nv", "amd": "rocm"}
SECTIONS = ("args", "cluster", "env", "requires", "expect")  # where a change can go, in this order
TODO_NOTE = "TODO(port): decide these, then delete the entries"


@dataclass(frozen=True)
class PortFiles:
    """Where a port's files go: the overlay, and a component for each cell that needs one."""

    overlay: Path
    components: dict[str, Path]  # cell id -> its component

    @classmethod
    def of(cls, steps: PortPlan, out: Path) -> PortFiles:
        folder = (locate.matrices_root(out) or out.parent) / "components" / "port"
        return cls(out, {cid: folder / f"{out.stem}-{_suffix(steps, cid)}.yaml" for cid in steps.per_cell})


def default_output(source: Path, cell_id: str, target: schemas.HardwareProfile) -> Path:
    """``matrices/<nv|rocm>/<spec>-<hardware>.yaml``."""
    root = locate.matrices_root(source) or source.parent
    stem = cell_id.partition("[")[0].rsplit("/", 1)[-1]
    return root / FOLDERS[target.vendor] / f"{stem}-{target.name}.yaml"


def texts(steps: PortPlan, source: Path, files: PortFiles, extra: tuple[Change, ...]) -> dict[Path, str]:
    """Every file's text, the overlay first: ``extra`` are the re-fit's changes and its follow-ups."""
    written: dict[Path, str] = {}
    adjust: dict[str, Any] = {}
    for cell_id, changes in steps.per_cell.items():
        component = files.components[cell_id]
        beyond = display_path(files.overlay)
        note = f"what {cell_id} needs on {steps.target.name} beyond {beyond} (run-matrix port)"
        body = {**sections(changes), "why": reasons(changes)}
        written[component] = dump(body, header=[schema_line(component), note])
        adjust[f"port-{_suffix(steps, cell_id)}"] = {
            "match": dict(steps.axes[cell_id]),
            "overlay": relative(component, files.overlay),
        }
    changes = (*steps.common, *extra)
    data: dict[str, Any] = {"extends": relative(source, files.overlay), "hardware": steps.target.name}
    data.update(sections(changes))
    if adjust:
        data["matrix"] = {"adjust": adjust}
    if steps.todo:
        data["todo"] = dict(steps.todo)
    why = {"hardware": f"port of {steps.source} to {steps.target.name} ({steps.target.description})"}
    data["why"] = {**why, **reasons(changes)}
    header = [
        schema_line(files.overlay),
        f"{steps.source} ported to {steps.target.name} by `run-matrix port`: each change comes from a",
        "translation rule of miles/porting.yaml (or a re-fit) and says why below. Review the TODOs.",
    ]
    overlay = dump(data, {("todo",): TODO_NOTE}, header)
    return {files.overlay: overlay, **written}


def sections(changes: tuple[Change, ...]) -> dict[str, Any]:
    """The changes as the spec's nesting: ``args.GROUP.FLAG`` and ``SECTION.NAME``."""
    data: dict[str, Any] = {}
    for section in SECTIONS:
        for change in (c for c in changes if c.key[0] == section):
            place = data.setdefault(section, {})
            for name in change.key[1:-1]:
                place = place.setdefault(name, {})
            place[change.key[-1]] = value_of(change.value)
    return data


def reasons(changes: tuple[Change, ...]) -> dict[str, str]:
    """``why:`` entries, each reason written once for the keys it explains (``a.b, a.c: reason``)."""
    keys: dict[str, list[str]] = {}
    for change in changes:
        named = keys.setdefault(change.reason, [])
        if change.dotted not in named:
            named.append(change.dotted)
    return {", ".join(names): reason for reason, names in keys.items()}


def value_of(value: Any) -> Any:
    """A change's value as the writer takes it: None deletes; ``${...}`` stays a reference."""
    if value is None:
        return DELETE
    if isinstance(value, str):
        return Expression(value)
    if isinstance(value, list):
        return [value_of(item) for item in value]
    return value


def _suffix(steps: PortPlan, cell_id: str) -> str:
    return "-".join(f"{axis}-{show(value)}" for axis, value in steps.axes[cell_id].items())


def schema_line(path: Path) -> str:
    """The editors' schema line of a file written at ``path``: relative to its folder where the file
    lies in run-matrix's own tree (the path travels with a clone), else the schema's absolute path. An
    editor resolves a relative ``$schema`` against the folder as it opened the file: a path climbing
    out of that folder to the clone is misread wherever a link lies between them."""
    schema = Path(schemas.__file__).parent / "spec.schema.json"
    inside = path.resolve().is_relative_to(schema.resolve().parents[1])
    return (
        f"yaml-language-server: $schema={relative(schema, path) if inside else schema.resolve().as_posix()}"
    )


def relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve().parent)).as_posix()
