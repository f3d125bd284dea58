"""run-matrix coverage: a hardware x test table — runs, skipped (reason, expiry), missing."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from runner import pipeline
from runner.cells import hardware
from runner.cells.cell import Cell
from runner.cli.output import (
    add_format,
    add_miles_python,
    add_miles_root,
    add_trust_checkout,
    miles_verdicts,
    needs_miles_root,
    print_json,
)
from runner.errors import UsageError
from runner.results.coverage import coverage, markdown, text


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="A table of tests (the base spec cells extend, and their axis values) against every "
        "hardware profile: which cells run there, which are skipped (reason, expiry), which are missing; "
        "each cell's CI suite (or runner label), est_time and nightly where its ci: block sets them; a cell "
        "with open todo: entries marked (N TODOs).",
    )
    parser.add_argument(
        "specs", nargs="*", default=["matrices"], metavar="DIR|SPEC", help="folders or spec files"
    )
    add_miles_root(
        parser,
        "check requires: against it, as run does (a cell whose requirement is unmet is skipped); without "
        "one, a cell with requires: is listed as 'requirements unchecked (no --miles-root)'",
    )
    add_miles_python(
        parser,
        "run the --miles-root checkout's own parse_args() on each cell's launch in the sandbox, as validate"
        " --miles-python does: each cell is marked (miles: accepts), (miles: refuses; its message on stderr)"
        " or (miles: unchecked: a value decided at launch)",
    )
    add_trust_checkout(parser)
    add_format(parser, "text", "markdown", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    needs_miles_root(args)
    names = list(hardware.profiles())
    cells = pipeline.select(args.specs)
    rows = coverage(cells, names, _unmet(cells, args.miles_root), _miles(cells, args))
    if args.format == "json":
        print_json(
            {
                "hardware": names,
                "tests": [
                    {
                        "test": r.test,
                        "variant": r.variant,
                        "hardware": {h: e.to_json() for h, e in r.entries.items()},
                        "ci": {cell: ci.model_dump(mode="json") for cell, ci in r.ci.items()},
                    }
                    for r in rows
                ],
            }
        )
    else:
        sys.stdout.write(markdown(rows, names) if args.format == "markdown" else text(rows, names))
    return 0


def _miles(cells: list[Cell], args: argparse.Namespace) -> dict[str, str] | None:
    """Each cell's verdict of miles' own parser, in a word (None: not asked)."""
    if args.miles_python is None:
        return None
    from runner import miles_parser

    return {cell: miles_parser.verdict(found) for cell, found in miles_verdicts(cells, args).items()}


def _unmet(cells: list[Cell], miles_root: Path | None) -> dict[str, list[str]] | None:
    """Each cell's unmet requirements, checked against ``miles_root`` as run checks them."""
    if miles_root is None:
        return None
    from runner.run import requires  # checks git, packages, files and env: only when asked

    checked = {c.id: requires.unmet(requires.check(c, miles_root.resolve(), os.environ)) for c in cells}
    return {cell: [r.describe() for r in found] for cell, found in checked.items()}
