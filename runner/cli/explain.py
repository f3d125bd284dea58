"""run-matrix explain: a resolved value and the chain of files that produced it."""

from __future__ import annotations

import argparse
from typing import Any

from runner import pipeline
from runner.cells import hardware
from runner.cells.cell import Cell
from runner.cells.gpumap import gpu_map
from runner.cells.gpumap import lines as gpu_lines
from runner.cells.layout import describe, layout
from runner.cli.output import add_format, add_miles_root, checked_miles_root, print_json
from runner.errors import SpecError, did_you_mean, display_path
from runner.knowledge import preset_data
from runner.knowledge.flags import Flag
from runner.spec.compose import Step
from runner.spec.load import Key, dotted, walk


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Show the resolved value of KEY (a dotted key such as args.sglang.sglang-dp-size) "
        "and every step that produced it: file:line, operation (set, override, delete, resolve) and "
        "the reason from why:, then the derived layout (actor DP, engines, attention TP per DP rank, "
        "MoE TP). "
        "Without KEY, every value of the spec with the place that set it last.",
    )
    parser.add_argument("spec", metavar="SPEC|CELL", help="a spec (its default cell) or a cell id")
    parser.add_argument(
        "key",
        nargs="?",
        metavar="KEY",
        help="a dotted key (args.perf.tensor-model-parallel-size); without it, every value",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="estimate the memory of the GPU that holds most, phase by phase (colocated: rollout, training, "
        "weight update; apart: each pool), each term in GB with its source; the verdicts of P10-P12",
    )
    parser.add_argument(
        "--layout",
        action="store_true",
        help="draw every GPU of every node: its actor rank (TP/CP/DP/PP, EP/ETP) and rollout engine rank",
    )
    add_miles_root(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    cell = pipeline.one(args.spec, checked_miles_root(args.miles_root))
    if args.memory:
        from runner.cli import explain_memory

        return explain_memory.show(cell, args.format)
    data = cell.spec.model_dump(mode="python")
    if args.key:
        entries = [_entry(cell, data, _key(cell, args.key))]
    elif args.layout:
        entries = []
    else:
        leaves = [key for key, value in walk(data) if not isinstance(value, dict)]
        entries = [_entry(cell, data, key) for key in leaves if key in cell.composed.provenance]
    facts = layout(cell)
    derived = describe(facts)
    gpus = gpu_map(facts, cell.location("cluster")) if args.layout else []
    if args.format == "json":
        data = {
            "cell": cell.id,
            "file": display_path(cell.path),
            "values": entries,
            "derived": derived,
            "flags": _flags(cell),
            "hardware": {
                "profile": cell.profile.name,
                "stack": cell.profile.stack,
                "why": hardware.stack_reason(cell.profile, cell.spec.miles_version),
            },
            "model_args": _preset(cell),
        }
        if args.layout:
            data["gpus"] = [gpu.to_json() for gpu in gpus]
        print_json(data)
    elif args.layout:
        for entry in entries:  # a KEY given with --layout: its chain, then the map
            print(_text(entry, detailed=True))
        print(f"{cell.id} on {cell.profile.name}")
        print("\n".join(f"  {name + ':':<9}{text}" for name, text in derived.items()))
        print("\n".join(gpu_lines(gpus)))
    else:
        for entry in entries:
            print(_text(entry, detailed=bool(args.key)))
        if args.key:
            print("derived:")
            print("\n".join(f"  {name}: {text}" for name, text in derived.items()))
        if cell.flags is not None:
            flag = _flag_of(cell, args.key)
            if flag is not None:
                print(f"flag: {flag.describe()}")
            print(f"flags checked against {cell.flags.reason}")
        print(f"hardware facts of {hardware.stack_reason(cell.profile, cell.spec.miles_version)}")
        if (preset := _preset(cell)) is not None:
            print(f"MODEL_ARGS from {preset['file']}: {preset['reason']}")
    return 0


def _flag_of(cell: Cell, key: str | None) -> Flag | None:
    """The catalog entry of an ``args.GROUP.NAME`` or ``model_args.NAME`` key (any spelling)."""
    parts = (key or "").split(".")
    name = (
        parts[2] if parts[0] == "args" and len(parts) == 3 else parts[1] if parts[0] == "model_args" else ""
    )
    return cell.flags.catalog.lookup(name, cell.backend) if name and cell.flags else None


def _flags(cell: Cell) -> dict[str, Any] | None:
    """Which flag catalog the cell is checked against, and why that one."""
    if cell.flags is None:
        return None
    catalog = cell.flags.catalog
    return {
        "catalog": catalog.origin,
        "miles": catalog.miles,
        "why": cell.flags.reason,
        "sources": catalog.sources,
    }


def _key(cell: Cell, text: str) -> Key:
    """The key a user typed, as written somewhere in the spec's chain."""
    for key in cell.composed.provenance:
        if dotted(key) == text:
            return key
    raise SpecError.one(
        "unknown-key",
        f"{cell.id} has no key {text!r}",
        key=text,
        at=[cell.location()],
        hint=did_you_mean(text, [dotted(k) for k in cell.composed.provenance])
        or "run `run-matrix explain SPEC` for every key.",
    )


def _entry(cell: Cell, data: dict[str, Any], key: Key) -> dict[str, Any]:
    node: Any = data
    for part in key:
        node = node.get(part) if isinstance(node, dict) else None
    steps = cell.composed.provenance.get(key, ())
    return {
        "key": dotted(key),
        "value": node,
        "deleted": bool(steps) and steps[-1].op == "delete",
        "chain": [_step(s) for s in steps],
    }


def _step(step: Step) -> dict[str, Any]:
    value = step.value
    return {
        "file": display_path(step.location.file),
        "line": step.location.line,
        "op": step.op,
        "value": None if step.op == "delete" or isinstance(value, dict) else str(value),
        "why": step.why,
    }


def _text(entry: dict[str, Any], detailed: bool) -> str:
    value = "(deleted)" if entry["deleted"] else _show(entry["value"])
    if not detailed:
        last = entry["chain"][-1]
        return f"{entry['key']} = {value}    # {last['file']}:{last['line']}"
    lines = [f"{entry['key']} = {value}"]
    for step in entry["chain"]:
        shown = f" {step['value']}" if step["value"] is not None else ""
        why = f"\n      why: {step['why']}" if step["why"] else ""
        lines.append(f"  {step['file']}:{step['line']}  {step['op']}{shown}{why}")
    return "\n".join(lines)


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def _preset(cell: Cell) -> dict[str, str] | None:
    """Which shipped preset the cell's MODEL_ARGS come from, and why that one (None: FSDP)."""
    if not cell.spec.model.type:
        return None
    if cell.notes and cell.preset_source.path.suffix != ".yaml":  # only the checkout has the type
        return {"file": str(cell.preset_source.path), "reason": cell.notes[0].message}
    chosen = preset_data.choose(cell.spec.model.type, cell.spec.miles_version, cell.location("model", "type"))
    return {"file": display_path(chosen.path), "reason": chosen.reason}
