"""run-matrix upgrade: write an overlay that moves a spec to another miles version."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from runner import atomic
from runner.cli.output import add_overlay_output, outside_note, print_validated
from runner.errors import display_path
from runner.spec import locate, repository
from runner.spec.paths import writable
from runner.upgrade import Upgraded, default_output, of_checkout, of_version, upgrade


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Compare the flag catalogs of SPEC's miles_version and of the target miles, then write "
        "the overlay (extends SPEC) that moves it: a flag that kept its meaning under a new name is "
        "renamed, one set to its old default is dropped, any other that is gone is deleted with a TODO "
        "naming what changed (the upstream change, from miles/upgrades.yaml, and the help texts); "
        "a flag kept under its name whose kind, type or arity changed, or whose choices lost the value, and "
        "a requires: on a miles branch or commit the target checkout lacks are TODOs; "
        "miles_version is set, so the model preset, launch conventions and hardware stack follow, and "
        "the reason says what changed in them. Then validate the result (each TODO printed once, as its "
        "G6 warning; a base, which has no hardware, "
        "as the specs that extend it use it; their own lines' problems are listed apart). "
        "Exit 2 if errors remain.",
    )
    parser.add_argument(
        "spec", metavar="SPEC", help="a spec or a base (its path, or its name under matrices/)"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--miles-root", type=Path, metavar="DIR", help="the miles checkout to move to")
    target.add_argument(
        "--to-version", metavar="COMMIT", help="a shipped miles version to move to, without a checkout"
    )
    add_overlay_output(parser, "default: <spec>-<commit>.yaml beside SPEC")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    source = locate.find_spec(args.spec)
    target = of_checkout(args.miles_root) if args.miles_root else of_version(args.to_version)
    for skipped in target.catalog.skipped:  # never a key of the overlay: said, with where it was read
        print(f"run-matrix: the checkout at {target.checkout}: {skipped}", file=sys.stderr)
    out = args.output or default_output(source, target)
    writable(out)
    atomic.refuse_existing([out], args.force)  # before the work: nothing to lose yet
    beyond = repository.written_beside(out, source)
    with repository.allowing([beyond] if beyond else []):
        moved = upgrade(source, target, out)
    atomic.write_new({out: moved.text}, args.force)
    report = {**_report(moved), "allow_root": str(beyond) if beyond else None}
    return print_validated(report, moved.problems, args.format, _lines(report), _theirs(report, moved))


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
        "checked_through": [display_path(p) for p in moved.checked_on],
        "extenders": [p.to_json() for p in moved.extenders],
    }


def _lines(report: dict[str, Any]) -> list[str]:
    """What was written; each TODO is said once, by its G6 warning at its line in the overlay."""
    lines = [f"wrote {report['overlay']}: miles {report['from']} -> {report['to']}"]
    for change in report["changes"]:
        value = "(deleted)" if change["value"] is None else f"= {change['value']}"
        why = (
            "a TODO: its warning below says what changed"
            if change["key"] in report["todo"]
            else change["why"]
        )
        lines.append(f"  {change['key']} {value}  ({why})")
    lines += [f"  follows: {note}" for note in report["follows"]]
    if report["checked_through"]:
        lines.append("  a base: validated as " + ", ".join(report["checked_through"]) + " use it")
    return lines + outside_note(report)


def _theirs(report: dict[str, Any], moved: Upgraded) -> list[str]:
    """A base's extenders' own problems: each of those specs wants its own upgrade."""
    if not moved.extenders:
        return []
    files = dict.fromkeys(loc["file"] for p in report["extenders"] for loc in p["locations"])
    return [
        f"and {len(report['extenders'])} at the lines of the specs that extend it (their own flags): "
        + "; ".join(f"run-matrix upgrade {f} --to-version {report['to']}" for f in files),
        *map(str, moved.extenders),
    ]
