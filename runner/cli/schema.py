"""run-matrix schema: the JSON Schema of spec files, for editors (yaml-language-server)."""

from __future__ import annotations

import argparse
from typing import Any

from runner.cli.output import add_format, print_json


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Print the JSON Schema generated from run-matrix's pydantic models (runners: "
        "runners.yaml of `ci plan`; ci-plan: what `ci plan --format json` prints). The checked-in "
        "copies are schemas/<kind>.schema.json; spec files name theirs in a yaml-language-server comment.",
    )
    parser.add_argument(
        "kind",
        nargs="?",
        choices=["spec", "hardware", "preset", "runners", "ci-plan"],
        default="spec",
        help="which document's schema",
    )
    add_format(parser, "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from runner.knowledge import launchers
    from schemas.jsonschema import schema

    print_json(schema(args.kind, launchers.shipped()))
    return 0
