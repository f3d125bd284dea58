"""run-matrix hardware: the hardware profiles, or one of them in full."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from runner import locate, pipeline
from runner.cli.output import add_format, print_json
from runner.errors import Location, SpecError, did_you_mean
from schemas import HardwareProfile


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="List the hardware profiles of matrices/hardware/ (the current directory's first, "
        "then run-matrix's), or show one with every capability and its sources.",
    )
    parser.add_argument("name", nargs="?", metavar="NAME")
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def profiles() -> dict[str, HardwareProfile]:
    """Every profile by name; the current directory's matrices/hardware/ wins over run-matrix's."""
    folders = [Path("matrices") / "hardware", locate.BUNDLED_MATRICES / "hardware"]
    found: dict[str, HardwareProfile] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.yaml")):
            found.setdefault(path.stem, pipeline.load_profile(path.resolve()))
    return dict(sorted(found.items()))


def run(args: argparse.Namespace) -> int:
    known = profiles()
    if args.name:
        if args.name not in known:
            raise SpecError.one(
                "unknown-name",
                f"no hardware profile named {args.name!r} (known: {', '.join(known)})",
                key="hardware",
                at=[Location(Path("matrices/hardware"))],
                hint=did_you_mean(args.name, known) or f"add matrices/hardware/{args.name}.yaml",
            )
        profile = known[args.name]
        if args.format == "json":
            print_json(profile.model_dump(mode="json"))
        else:
            print(_details(profile))
        return 0
    if args.format == "json":
        print_json({"profiles": [p.model_dump(mode="json") for p in known.values()]})
        return 0
    rows = [("NAME", "VENDOR", "ARCH", "GPUS/NODE", "MEMORY", "DESCRIPTION")]
    rows += [
        (p.name, p.vendor, p.arch, str(p.gpus_per_node), f"{p.memory_gb} GB", p.description)
        for p in known.values()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[5])
    return 0


def _details(profile: HardwareProfile) -> str:
    lines = [
        f"{profile.name}: {profile.description}",
        f"  vendor {profile.vendor}, platform {profile.platform}, arch {profile.arch},"
        f" compute capability {profile.compute_capability[0]}.{profile.compute_capability[1]}",
        f"  {profile.gpus_per_node} GPUs per node x {profile.memory_gb} GB; {profile.interconnect}",
        f"  GPUs selected by {profile.visible_devices_env}",
        "  supports:",
    ]
    for name, value in profile.supports.model_dump().items():
        shown = (
            ", ".join(value)
            if isinstance(value, list)
            else str(value).lower()
            if isinstance(value, bool)
            else value
        )
        lines.append(f"    {name}: {shown}")
    lines += ["  sources:", *(f"    {source}" for source in profile.sources)]
    return "\n".join(lines)
