"""run-matrix render: the exact commands of a launch, as shell or JSON; nothing is run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from runner import checkout, pipeline
from runner.cell import Cell
from runner.cli.output import SELECT_HELP, add_format, print_json, print_problems
from runner.errors import Problem, UsageError, display_path
from runner.render import MILES_ROOT_REFERENCE, Context, preset_tokens, render, to_shell


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
        help="miles checkout (default: $MILES_ROOT); its scripts/models/<type>.sh is read for MODEL_ARGS",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    launches = []
    for cell in pipeline.select(args.specs, args.k):
        problems = pipeline.problems(cell)
        context, drift = _context(cell, args.miles_root)
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


def _context(cell: Cell, miles_root: Path | None) -> tuple[Context, list[Problem]]:
    """What render needs from this machine: the caller's env and, if given, the checkout."""
    if miles_root is None:
        return Context(dict(os.environ), MILES_ROOT_REFERENCE), []
    root = str(miles_root.resolve())
    found = checkout.model_args(miles_root, cell.spec.model.type)
    where = (cell.location("model", "type"),)
    if found is None:
        return Context(dict(os.environ), root), []
    if found.tokens is None:
        note = Problem(
            "model-args",
            f"cannot read {found.source} ({found.reason}); using the preset",
            "model.type",
            where,
            "warning",
        )
        return Context(dict(os.environ), root), [note]
    preset = preset_tokens(cell)
    drift = []
    if tuple(found.tokens) != preset:
        drift.append(
            Problem(
                "model-args",
                f"MODEL_ARGS of {found.source} differ from the preset {cell.preset.type}: "
                f"{_token_difference(preset, found.tokens)}; rendering the checkout's",
                "model.type",
                where,
                "warning",
                hint=f"update miles/models/{cell.preset.type}.yaml if the checkout is right",
            )
        )
    return Context(dict(os.environ), root, found.tokens), drift


def _token_difference(preset: tuple[str, ...], found: tuple[str, ...]) -> str:
    only_preset = [t for t in preset if t not in found]
    only_found = [t for t in found if t not in preset]
    parts = []
    if only_found:
        parts.append("checkout has " + " ".join(only_found))
    if only_preset:
        parts.append("preset has " + " ".join(only_preset))
    return "; ".join(parts) or "same tokens in another order"
