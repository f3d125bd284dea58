"""run-matrix coverage: a hardware x test table — runs, skipped (reason, expiry), missing."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from runner import hardware, pipeline
from runner.cli.output import add_format, print_json
from runner.coverage import coverage, markdown, text


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="A table of tests (the base spec cells extend, and their axis values) against every "
        "hardware profile: which cells run there, which are skipped (reason, expiry), which are missing; "
        "each cell's CI suite (or runner label), est_time and nightly where its ci: block sets them.",
    )
    parser.add_argument("specs", nargs="*", default=["matrices"], metavar="DIR|SPEC")
    add_format(parser, "text", "markdown", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    names = list(hardware.profiles())
    rows = coverage(pipeline.select(args.specs), names)
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
