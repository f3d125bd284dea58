"""run-matrix port: write an overlay that moves a spec to another hardware profile."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import schemas
from runner import check, hardware, locate, pipeline
from runner.cli.output import add_format, print_json, print_problems
from runner.errors import (
    EnvironmentProblem,
    Problem,
    SpecError,
    UsageError,
    display_path,
)
from runner.matrix import show
from runner.paths import writable
from runner.port import (
    Change,
    Plan,
    after_refit,
    component_text,
    overlay_text,
    plan,
    porting,
    refits,
)
from runner.port_reasons import stale_reasons
from schemas import HardwareProfile

FOLDERS = {"nvidia": "nv", "amd": "rocm"}
MAX_REFITS = 500


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="write an overlay that ports a spec to other hardware",
        description="Apply every translation rule of miles/porting.yaml that fires for SPEC's cells on "
        "HARDWARE, write the overlay (extends SPEC, each change's reason in why:), re-fit literal "
        "parallelism to a smaller node (choosing values that validate), leave what no rule decides "
        "as a TODO (a validation warning), then validate the result. Exit 2 if errors remain.",
    )
    parser.add_argument(
        "spec",
        metavar="SPEC|CELL",
        help="a spec, or a cell id of it (checked like every selection; the overlay ports the whole spec)",
    )
    parser.add_argument("--to", required=True, metavar="HARDWARE", help="a hardware profile name")
    parser.add_argument(
        "-o", "--output", type=Path, help="default: matrices/<nv|rocm>/<spec>-<hardware>.yaml"
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite the overlay (and its components) if they exist"
    )
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


@dataclass
class Written:
    overlay: Path
    components: dict[str, Path]  # cell id -> its component


def run(args: argparse.Namespace) -> int:
    pipeline.select([args.spec])  # a cell id is checked as every command checks it
    source = locate.find_spec(args.spec.partition("[")[0])
    cells = pipeline.cells(source)  # the overlay extends the spec: every cell of it is ported
    target = _target(args.to, cells[0].spec.miles_version)
    steps = plan(cells, target, porting())
    out = args.output or _default_output(source, cells[0].id, target)
    _refuse_overwrite([out, *(_component(steps, out, cid) for cid in steps.per_cell)], args.force)
    writable(out)
    try:
        written = _write(steps, source, out, extra=())
        problems, refit = _validated(written), tuple[Change, ...]()
        if _errors(problems) and target.gpus_per_node < cells[0].spec.cluster.gpus_per_node:
            problems, refit = _refit(steps, cells, source, out, target)
        extra = _followups(steps, cells, source, out, refit)
        if extra != refit:
            problems = _validated(_write(steps, source, out, extra))
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    caused = _caused(problems, cells)
    report = _report(steps, written, extra, problems, caused)
    if args.format == "json":
        print_json(report)
    else:
        _print(report, problems)
    return 2 if _errors(problems) else 0


def _refuse_overwrite(paths: list[Path], force: bool) -> None:
    """A ported overlay is edited by hand afterwards: never lose that work silently."""
    existing = [display_path(p) for p in paths if p.exists()]
    if existing and not force:
        raise UsageError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "--force overwrites (your edits are lost), -o writes elsewhere"
        )


def _followups(
    steps: Plan, cells: list[Any], source: Path, out: Path, refit: tuple[Change, ...]
) -> tuple[Change, ...]:
    """After a re-fit: the flags it made pointless, then the source's reasons whose numbers it changed."""
    default = next(c for c in cells if "[" not in c.id)
    extra = refit
    if refit:
        ported = _default_cell(_write(steps, source, out, extra))
        extra = (*extra, *after_refit(ported, steps.target, porting()))
    ported = _default_cell(_write(steps, source, out, extra))
    written = {c.dotted for c in (*steps.common, *extra)}
    return (*extra, *stale_reasons(default, ported, written))


def _default_cell(written: Written) -> Any:
    return next(c for c in pipeline.cells(written.overlay) if "[" not in c.id)


def _caused(problems: list[Problem], cells: list[Any]) -> list[Problem]:
    """Warnings the port brought (a TODO, G6, is a question it asks on purpose)."""
    before = {(p.rule, p.key) for cell in cells for p in check.run(cell)}
    return [p for p in problems if p.rule != "G6" and (p.rule, p.key) not in before]


def _target(name: str, miles_version: str | None) -> HardwareProfile:
    """The target as the ported cells see it: the stack of the miles version the source targets."""
    return hardware.on_stack(hardware.named(name, "--to"), miles_version)


def _default_output(source: Path, cell_id: str, target: HardwareProfile) -> Path:
    root = locate.matrices_root(source) or source.parent
    stem = cell_id.partition("[")[0].rsplit("/", 1)[-1]
    return root / FOLDERS[target.vendor] / f"{stem}-{target.name}.yaml"


def _write(steps: Plan, source: Path, out: Path, extra: tuple[Change, ...]) -> Written:
    out.parent.mkdir(parents=True, exist_ok=True)
    adjust: dict[str, tuple[dict[str, Any], str]] = {}
    components: dict[str, Path] = {}
    for cell_id, changes in steps.per_cell.items():
        axes = steps.axes[cell_id]
        suffix = "-".join(f"{axis}-{show(value)}" for axis, value in axes.items())
        component = _component(steps, out, cell_id)
        component.parent.mkdir(parents=True, exist_ok=True)
        note = f"what {cell_id} needs on {steps.target.name} beyond {display_path(out)} (run-matrix port)"
        component.write_text(component_text(_relative(_schema(), component), note, changes))
        adjust[f"port-{suffix}"] = (axes, _relative(component, out))
        components[cell_id] = component
    changes = (*steps.common, *extra)
    why = {"hardware": f"port of {steps.source} to {steps.target.name} ({steps.target.description})"}
    why.update({change.dotted: change.reason for change in changes})
    header = [
        f"{steps.source} ported to {steps.target.name} by `run-matrix port`: each change comes from a",
        "translation rule of miles/porting.yaml (or a re-fit) and says why below. Review the TODOs.",
    ]
    text = overlay_text(
        steps, header, _relative(source, out), _relative(_schema(), out), changes, adjust, why
    )
    out.write_text(text)
    return Written(out, components)


def _component(steps: Plan, out: Path, cell_id: str) -> Path:
    suffix = "-".join(f"{axis}-{show(value)}" for axis, value in steps.axes[cell_id].items())
    return (locate.matrices_root(out) or out.parent) / "components" / "port" / f"{out.stem}-{suffix}.yaml"


def _validated(written: Written) -> list[Problem]:
    """Every cell's problems, each once (cells of one matrix share most of them)."""
    try:
        found = [p for cell in pipeline.cells(written.overlay) for p in check.run(cell)]
    except SpecError as exc:
        found = list(exc.problems)
    return list(dict.fromkeys(found))


def _refit(
    steps: Plan, cells: list[Any], source: Path, out: Path, target: HardwareProfile
) -> tuple[list[Problem], tuple[Change, ...]]:
    default = next(c for c in cells if "[" not in c.id)
    problems: list[Problem] = []
    for tried, extra in enumerate(refits(default, target, porting().refit_flags)):
        if tried >= MAX_REFITS:
            break
        problems = _validated(_write(steps, source, out, extra))
        if not _errors(problems):
            return problems, extra
    return _validated(_write(steps, source, out, ())), ()


def _errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)


def _schema() -> Path:
    return Path(schemas.__file__).parent / "spec.schema.json"


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve().parent)).as_posix()


def _report(
    steps: Plan, written: Written, extra: tuple[Change, ...], problems: list[Problem], caused: list[Problem]
) -> dict[str, Any]:
    return {
        "source": steps.source,
        "target": steps.target.name,
        "overlay": display_path(written.overlay),
        "components": {cell: display_path(path) for cell, path in written.components.items()},
        "applied": [
            {"key": c.dotted, "value": c.value, "rule": c.rule, "why": c.reason} for c in steps.common
        ],
        "per_cell": {
            cell: [{"key": c.dotted, "value": c.value, "rule": c.rule} for c in changes]
            for cell, changes in steps.per_cell.items()
        },
        "refit": [{"key": c.dotted, "value": c.value, "why": c.reason} for c in extra if c.rule == "refit"],
        "followups": [
            {"key": c.dotted, "value": c.value, "rule": c.rule, "why": c.reason}
            for c in extra
            if c.rule != "refit"
        ],
        "todo": steps.todo,
        "problems": [p.to_json() for p in problems],
        "caused": [p.to_json() for p in caused],
    }


def _print(report: dict[str, Any], problems: list[Problem]) -> None:
    import sys

    print(f"wrote {report['overlay']}" + "".join(f"\nwrote {p}" for p in report["components"].values()))
    for change in report["applied"]:
        value = "(deleted)" if change["value"] is None else change["value"]
        print(f"  {change['rule']:<20} {change['key']} = {value}")
    for cell, changes in report["per_cell"].items():
        shown = [c["key"] + (" (deleted)" if c["value"] is None else f" = {c['value']}") for c in changes]
        print(f"  only {cell}: " + ", ".join(shown))
    for change in report["refit"]:
        print(f"  {'refit':<20} {change['key']} = {change['value']}  ({change['why']})")
    for change in report["followups"]:
        value = "(deleted)" if change["value"] is None else change["value"]
        print(f"  {change['rule']:<20} {change['key']} = {value}  ({change['why']})")
    for key, note in report["todo"].items():
        print(f"  TODO {key}: {note}")
    print_problems(problems, sys.stdout)
    errors = sum(p.severity == "error" for p in problems)
    print(f"validated: {errors} errors, {len(problems) - errors} warnings")
    if report["caused"]:
        print(
            f"the port caused {len(report['caused'])} of them: add a rule to miles/porting.yaml (after_refit)"
        )
