"""run-matrix hardware: the hardware profiles, or one of them in full."""

from __future__ import annotations

import argparse
from typing import Any

from runner.cells import hardware
from runner.cli.output import add_format, print_json
from schemas.hardware import MACHINE_SOURCE, HardwareProfileFile


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="List the hardware profiles of matrices/hardware/ (the current directory's first, "
        "then run-matrix's) with the software stacks each knows, or show one with every capability, "
        "the stack it holds for, and its source.",
    )
    parser.add_argument(
        "name", nargs="?", metavar="NAME", help="one profile to show in full (without it: the list)"
    )
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.name:
        profile = hardware.named(args.name, "hardware")
        if args.format == "json":
            print_json(profile.model_dump(mode="json"))
        else:
            print(_details(profile))
        return 0
    known = hardware.profiles()
    if args.format == "json":
        print_json({"profiles": [p.model_dump(mode="json") for p in known.values()]})
        return 0
    rows = [("NAME", "VENDOR", "ARCH", "GPUS/NODE", "MEMORY", "STACKS", "DESCRIPTION")]
    rows += [
        (
            p.name,
            p.vendor,
            p.arch,
            str(p.gpus_per_node),
            f"{p.memory_gb} GB",
            ", ".join(p.stacks) or "-",
            p.description,
        )
        for p in known.values()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def _details(profile: HardwareProfileFile) -> str:
    lines = [
        f"{profile.name}: {profile.description}",
        f"  vendor {profile.vendor}, platform {profile.platform}, arch {profile.arch},"
        f" compute capability {profile.compute_capability[0]}.{profile.compute_capability[1]}",
        f"  {profile.gpus_per_node} GPUs per node x {profile.memory_gb} GB; {profile.interconnect}",
        f"  GPUs selected by {profile.visible_devices_env}",
    ]
    if MACHINE_SOURCE in profile.sources:
        lines.append(f"  source: {profile.sources[MACHINE_SOURCE]}")
    lines.append("  supports, on every stack:" if profile.stacks else "  supports:")
    lines += _facts(profile.supports.stated(), profile.sources)
    for name, stack in profile.stacks.items():
        lines.append(f"  stack {name}: the container of miles {stack.miles_version}")
        for label, value in (
            ("container", stack.container),
            ("SGLang", stack.sglang),
            ("Transformer Engine", stack.transformer_engine),
        ):
            if value:
                lines.append(f"    {label}: {value}")
        lines += _facts(stack.supports.stated(), stack.sources)
    return "\n".join(lines)


def _facts(facts: dict[str, Any], sources: dict[str, str], indent: str = "") -> list[str]:
    lines = []
    for name, value in facts.items():
        shown = (
            ", ".join(value)
            if isinstance(value, list)
            else str(value).lower()
            if isinstance(value, bool)
            else value
        )
        lines.append(f"{indent}    {name}: {shown}")
        if name in sources:
            lines.append(f"{indent}      source: {sources[name]}")
    return lines
