"""Presentation at the edge: problems and data as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from runner.errors import Problem
from runner.load import WrittenFloat

SELECT_HELP = (
    "select cells: an id, an id glob (rocm/*) or an expression over axis values (fp8_rollout and not rocm)"
)


def add_format(parser: argparse.ArgumentParser, *choices: str) -> None:
    parser.add_argument(
        "--format", choices=choices, default=choices[0], help=f"output format (default: {choices[0]})"
    )


def add_trust_checkout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-checkout",
        action="store_true",
        help="run the checkout's code without the sandbox's isolation (only where the machine has no "
        "bubblewrap or namespaces): it then sees your files and the network, as you",
    )


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=_plain)
    sys.stdout.write("\n")


def _plain(value: Any) -> Any:
    if isinstance(value, WrittenFloat):
        return float(value)
    return str(value)


def print_problems(problems: Iterable[Problem], stream: TextIO) -> None:
    for problem in problems:
        print(problem, file=stream)
