"""run-matrix coverage: a hardware x test table — runs, skipped (reason, expiry), missing."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from runner import hardware, pipeline
from runner.cli.output import add_format, print_json
from runner.coverage import coverage, markdown, text


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="which test runs on which hardware: runs, skipped, missing",
        description="A table of tests (the base spec cells extend, and their axis values) against every "
        "hardware profile: which cells run there, which are skipped (reason, expiry), which are missing.",
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
                    }
                    for r in rows
                ],
            }
        )
    else:
        sys.stdout.write(markdown(rows, names) if args.format == "markdown" else text(rows, names))
    return 0
