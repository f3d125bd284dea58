"""run-matrix port: write an overlay that moves a spec to another hardware profile."""

from __future__ import annotations

import argparse
from typing import Any

from runner import atomic, pipeline
from runner.cells import hardware
from runner.cli.output import add_overlay_output, outside_note, print_validated
from runner.errors import display_path
from runner.port import Ported, port
from runner.port.files import default_output
from runner.spec import locate, repository
from runner.spec.paths import writable
from schemas import HardwareProfile


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Apply every translation rule of miles/porting.yaml that fires for SPEC's cells on "
        "HARDWARE, write the overlay (extends SPEC, each change's reason in why:), re-fit literal "
        "parallelism to a smaller node, or to GPUs that hold less (rule P10: the least parallelism that "
        "fits), choosing values that validate; leave what no rule decides, and a cell no layout fits "
        "(with its numbers), as a TODO (a validation warning), then validate the result. Exit 2 if "
        "errors remain.",
    )
    parser.add_argument(
        "spec",
        metavar="SPEC|CELL",
        help="a spec, or a cell id of it (checked like every selection; the overlay ports the whole spec)",
    )
    parser.add_argument("--to", required=True, metavar="HARDWARE", help="a hardware profile name")
    add_overlay_output(parser, "default: matrices/<nv|rocm>/<spec>-<hardware>.yaml", " (and its components)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    pipeline.select([args.spec])  # a cell id is checked as every command checks it
    source = locate.find_spec(args.spec.partition("[")[0])
    cells = pipeline.cells(source)  # the overlay extends the spec: every cell of it is ported
    target = _target(args.to, cells[0].spec.miles_version)
    out = args.output or default_output(source, cells[0].id, target)
    writable(out)
    beyond = repository.written_beside(out, source)
    with repository.allowing([beyond] if beyond else []):
        ported = port(cells, source, target, out)
    atomic.write_new(ported.texts, args.force)
    report = {**_report(ported), "allow_root": str(beyond) if beyond else None}
    return print_validated(report, ported.problems, args.format, _lines(report), _caused(report))


def _target(name: str, miles_version: str | None) -> HardwareProfile:
    """The target as the ported cells see it: the stack of the miles version the source targets."""
    return hardware.on_stack(hardware.named(name, "--to"), miles_version)


def _report(ported: Ported) -> dict[str, Any]:
    steps, extra = ported.steps, ported.extra
    return {
        "source": steps.source,
        "target": steps.target.name,
        "overlay": display_path(ported.files.overlay),
        "components": {cell: display_path(path) for cell, path in ported.files.components.items()},
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
        "problems": [p.to_json() for p in ported.problems],
        "caused": [p.to_json() for p in ported.caused],
    }


def _lines(report: dict[str, Any]) -> list[str]:
    lines = [f"wrote {report['overlay']}", *(f"wrote {p}" for p in report["components"].values())]
    for change in report["applied"]:
        value = "(deleted)" if change["value"] is None else change["value"]
        lines.append(f"  {change['rule']:<20} {change['key']} = {value}")
    for cell, changes in report["per_cell"].items():
        shown = [c["key"] + (" (deleted)" if c["value"] is None else f" = {c['value']}") for c in changes]
        lines.append(f"  only {cell}: " + ", ".join(shown))
    for change in report["refit"]:
        lines.append(f"  {'refit':<20} {change['key']} = {change['value']}  ({change['why']})")
    for change in report["followups"]:
        value = "(deleted)" if change["value"] is None else change["value"]
        lines.append(f"  {change['rule']:<20} {change['key']} = {value}  ({change['why']})")
    return lines + outside_note(report)  # each TODO is said once, by its G6 warning at its line


def _caused(report: dict[str, Any]) -> list[str]:
    if not report["caused"]:
        return []
    return [
        f"the port caused {len(report['caused'])} of them: add a rule to miles/porting.yaml (after_refit)"
    ]
