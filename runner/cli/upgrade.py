"""run-matrix upgrade: write an overlay that moves a spec to another miles version."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from runner import locate, pipeline
from runner.atomic import write_all
from runner.cli.output import add_format, print_json, print_problems
from runner.errors import UsageError, display_path
from runner.paths import writable
from runner.upgrade import Upgraded, of_checkout, of_version, upgrade


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Compare the flag catalogs of SPEC's miles_version and of the target miles, then write "
        "the overlay (extends SPEC) that moves it: a flag that kept its meaning under a new name is "
        "renamed, one set to its old default is dropped, any other that is gone is deleted with a TODO "
        "naming what changed (the upstream change, from miles/upgrades.yaml, and the help texts); "
        "miles_version is set, so the model preset, launch conventions and hardware stack follow, and "
        "the reason says what changed in them. Then validate the result. Exit 2 if errors remain.",
    )
    parser.add_argument("spec", metavar="SPEC", help="a spec (its path, or its name under matrices/)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--miles-root", type=Path, metavar="DIR", help="the miles checkout to move to")
    target.add_argument(
        "--to-version", metavar="COMMIT", help="a shipped miles version to move to, without a checkout"
    )
    parser.add_argument("-o", "--output", type=Path, help="default: <spec>-<commit>.yaml beside SPEC")
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite the output if it exists (a link is replaced, never its target)",
    )
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    source = locate.find_spec(args.spec)
    target = of_checkout(args.miles_root) if args.miles_root else of_version(args.to_version)
    cells = pipeline.cells(source)
    out = args.output or source.with_name(f"{source.stem}-{target.version}.yaml")
    writable(out)
    if out.exists() and not args.force:
        raise UsageError(
            f"{display_path(out)} already exists; --force overwrites (your edits are lost), "
            "-o writes elsewhere"
        )
    moved = upgrade(cells, source, target, out)
    write_all({out: moved.text}, replace_link=args.force)
    report = _report(moved)
    if args.format == "json":
        print_json(report)
    else:
        _print(report, moved)
    return 2 if any(p.severity == "error" for p in moved.problems) else 0


def _report(moved: Upgraded) -> dict[str, Any]:
    steps = moved.plan
    return {
        "overlay": display_path(moved.out),
        "from": steps.source,
        "to": steps.target.version,
        "changes": [{"key": c.dotted, "value": c.value, "why": c.reason} for c in steps.changes],
        "follows": moved.notes,
        "todo": steps.todo,
        "problems": [p.to_json() for p in moved.problems],
    }


def _print(report: dict[str, Any], moved: Upgraded) -> None:
    print(f"wrote {report['overlay']}: miles {report['from']} -> {report['to']}")
    for change in report["changes"]:
        value = "(deleted)" if change["value"] is None else f"= {change['value']}"
        print(f"  {change['key']} {value}  ({change['why']})")
    for note in report["follows"]:
        print(f"  follows: {note}")
    for key, note in report["todo"].items():
        print(f"  TODO {key}: {note}")
    print_problems(moved.problems, sys.stdout)
    errors = sum(p.severity == "error" for p in moved.problems)
    print(f"validated: {errors} errors, {len(moved.problems) - errors} warnings")
