"""run-matrix import: turn an existing miles test script into a spec (nothing of it is run)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from runner.cli.output import add_format, add_miles_root, add_trust_checkout, print_json, print_problems
from runner.errors import display_path


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Run a miles test script with miles' command helpers replaced by recorders (nothing is "
        "executed, downloaded or started), capture every execute_train call and the prepare commands before "
        "it, and write a spec that renders exactly that launch: flags grouped by the script's variables, env "
        "vars, train script, GPUs, model type, prepare steps. Variant switches the script reads "
        "(MILES_TEST_USE_FP8_ROLLOUT, MILES_TEST_FEW_GPU, ...) and repeated execute_train calls become "
        "matrix axes. The round trip is checked before anything is written.",
    )
    parser.add_argument("script", type=Path, metavar="TEST.py", help="the miles test script")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="the spec to write (default: ./<script name>.yaml)"
    )
    parser.add_argument(
        "--base", metavar="SPEC", help="write an overlay of this spec: only what differs from it"
    )
    parser.add_argument("--hardware", metavar="NAME", help="the hardware profile (default: the base's)")
    add_miles_root(
        parser,
        "its own helper module is loaded, its command and network calls replaced by recorders; "
        "MODEL_ARGS come from its scripts/models/",
    )
    parser.add_argument("--force", action="store_true", help="replace files that exist")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="seconds each run of the script may take in the sandbox (default: 60)",
    )
    add_trust_checkout(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def run(args: argparse.Namespace) -> int:
    from runner import locate
    from runner.importer import Request, import_test
    from runner.paths import writable

    output = args.output or Path(f"{args.script.stem}.yaml")
    writable(output)  # before the script runs: a path that cannot be written is exit 3 now, not later
    base = locate.find_spec(args.base) if args.base else None
    request = Request(
        args.script,
        output,
        base,
        args.hardware,
        args.miles_root,
        args.force,
        timeout=args.timeout,
        trust_checkout=args.trust_checkout,
    )
    result = import_test(request)
    print_problems(result.warnings, sys.stderr)
    if args.format == "json":
        print_json(
            {
                "files": [display_path(path) for path in result.files],
                "cells": result.cells,
                "axes": result.axes,
                "switches": result.switches,
                "notes": [{"message": n.message, "at": str(n.at)} for n in result.notes],
                "warnings": [p.to_json() for p in result.warnings],
            }
        )
        return 0
    for note in result.notes:
        print(f"{note.at}: note: {note.message}", file=sys.stderr)
    print(f"wrote {', '.join(display_path(path) for path in result.files)}")
    print(f"{len(result.cells)} cell(s): {', '.join(result.cells)}; each renders what the script launches")
    return 0
