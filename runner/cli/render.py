"""run-matrix render: the exact commands of a launch, as shell or JSON; nothing is run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from runner import pipeline
from runner.checkout import launch_context
from runner.cli.output import SELECT_HELP, add_format, print_json, print_problems
from runner.errors import UsageError, display_path
from runner.render import render, to_shell


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="print the exact launch commands (nothing is run)",
        description="Render each spec into the launch miles expects: prepare steps, the Ray head and "
        "the job submission (python3 <miles>/train.py|train_async.py MODEL_ARGS... flags).",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC|CELL", help="spec file or folder, or a cell id")
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    add_format(parser, "shell", "json")
    parser.add_argument(
        "--miles-root",
        type=Path,
        default=os.environ.get("MILES_ROOT") or None,
        help="miles checkout (default: $MILES_ROOT); its scripts/models/<type>.sh is read for MODEL_ARGS "
        "and its own flags decide which flags are valid",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    launches = []
    for cell in pipeline.select(args.specs, args.k, args.miles_root):
        problems = pipeline.problems(cell)
        context, drift = launch_context(cell, args.miles_root, os.environ)
        problems += drift
        print_problems(problems, sys.stderr)
        launches.append((render(cell, context), problems, cell.path))
    if args.format == "json":
        cells = [
            {**launch.to_json(), "warnings": [p.to_json() for p in problems]}
            for launch, problems, _ in launches
        ]
        print_json({"cells": cells})
    else:
        sys.stdout.write("\n".join(to_shell(launch, display_path(path)) for launch, _, path in launches))
    return 0
