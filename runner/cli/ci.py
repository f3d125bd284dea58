"""run-matrix ci plan: cells to runner classes, balanced by est_time, as a GitHub Actions matrix."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from runner import pipeline
from runner.cells.cell import Cell
from runner.changed.gather import narrow
from runner.ci import budget, estimate, present
from runner.ci.plan import plan
from runner.ci.runners import load_runners
from runner.cli.output import SELECT_HELP, add_changed, add_miles_root, print_json
from runner.errors import ExitCode, UsageError, display_path, printable
from runner.spec import locate


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="`ci plan` routes every runnable cell to one runner class of runners.yaml that has "
        "its hardware and at least its GPUs (the smallest that fits), then spreads each class's cells "
        "over its runners, longest est_time first onto the least-loaded one; `--format github` prints the "
        "GitHub Actions matrix, `--format json` the whole plan. `ci sync` rebuilds what run-matrix knows "
        "of miles' own CI (each platform's environment, each suite's runners) from a checkout.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    each = actions.add_parser(
        "plan",
        help="print the plan: a GitHub Actions strategy.matrix, JSON or Markdown",
        description="Route and balance the selected cells (default: matrices/) over the runner classes "
        "of --runners. est_time: the mean of a cell's last recorded durations in --history (else "
        "$RUN_MATRIX_HISTORY_URL), else its ci.est_time, else its timeout, else 600 s. Skipped cells, "
        "and nightly ones without --nightly, are "
        "not planned; cells no class can take are listed with the reason (exit 1 under --strict). "
        '--format github prints {"include": [{"runs-on", "shard", "cells"}]} on one line, for '
        "fromJSON; `run-matrix run --shard-of PLAN K` (or --cells FILE) runs one shard.",
    )
    each.add_argument(
        "specs",
        nargs="*",
        default=["matrices"],
        metavar="SPEC|DIR|CELL",
        help="spec files, folders or cell ids",
    )
    each.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    each.add_argument(
        "--runners",
        type=Path,
        required=True,
        metavar="FILE",
        help="runners.yaml: runners: [{label, hardware, gpus, count}]",
    )
    each.add_argument(
        "--format",
        choices=("github", "json", "markdown"),
        default="github",
        help="output format (default: github)",
    )
    each.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a runnable cell has no runner class that can take it",
    )
    each.add_argument("--nightly", action="store_true", help="plan the cells whose ci.nightly is true too")
    each.add_argument(
        "--history",
        metavar="PATH|URL",
        help="est_time from the durations recorded there: a SQLite file or postgresql://... "
        "(default: $RUN_MATRIX_HISTORY_URL; without either, from the specs)",
    )
    add_changed(each)
    add_miles_root(each, "its files count as changed inputs (--changed, --since); its flags are not read")
    each.add_argument(
        "--budget-gpu-hours",
        type=float,
        metavar="H",
        help="exit 1 when the plan needs more GPU-hours (est_time x GPUs x attempts, retries at their "
        "maximum), naming the total and the largest cells",
    )
    each.set_defaults(handler=run)
    sync = actions.add_parser(
        "sync",
        help="rebuild the CI knowledge of a miles version from a checkout (miles/ci/<date>-<commit>.yaml)",
        description="Read what each platform's CI sets for a test's process (the env: of the reusable "
        "workflow that runs its suites, the ENV lines of its image: docker/Dockerfile[.rocm]) "
        "and which runner labels, GPU model and GPU count each suite runs on (.github/workflows/, "
        "tests/ci/run_suite.py), each with its file:line, and write it as miles/ci/<date>-<commit8>.yaml. "
        "Import records a test once per platform it registers for, with that platform's environment. "
        "Nothing of the checkout is run; a file that does not parse is reported and the others are read.",
    )
    sync.add_argument(
        "--miles-root", type=Path, required=True, metavar="DIR", help="the miles checkout (a git clone)"
    )
    sync.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when the shipped file differs"
    )
    sync.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="DIR",
        help="the folder to write to (default: run-matrix's miles/ci/)",
    )
    sync.add_argument(
        "--trust-checkout", action="store_true", help="ask git for the commit without the sandbox"
    )
    sync.set_defaults(handler=run_sync)


def run(args: argparse.Namespace) -> int:
    if args.budget_gpu_hours is not None and not args.budget_gpu_hours >= 0:
        raise UsageError(f"--budget-gpu-hours {args.budget_gpu_hours:g}: a number of hours, 0 or more")
    cells = once(pipeline.select(args.specs, args.k))
    for cell in cells:
        pipeline.problems(cell)  # an invalid cell is exit 2 here, not on the runner
    classes = load_runners(args.runners, _hardware(args.specs, cells))
    chosen = narrow(cells, args.changed, args.since, args.miles_root)
    why = {s.cell.id: s.reasons for s in chosen} if chosen is not None else {}
    cells = [c for c in cells if c.id in why] if chosen is not None else cells
    durations = estimate.recorded(args.history, os.environ, [c.id for c in cells])
    planned = [estimate.planned_cell(cell, durations, why.get(cell.id, ())) for cell in cells]
    skipped = {c.id: f"skipped: {c.skip.reason}" for c in cells if c.skip}
    result = plan(planned, classes, skipped, nightly=args.nightly, specs=args.specs)
    result = result.model_copy(update={"budget_gpu_hours": args.budget_gpu_hours})
    if args.format == "github":
        print(json.dumps(present.github(result), separators=(",", ":")))
    elif args.format == "json":
        print_json(result.model_dump(mode="json"))
    else:
        sys.stdout.write(present.markdown(result))
    for left in result.unplaced:
        print(f"run-matrix: no runner for {left.id}: {left.reason}", file=sys.stderr)
    refused = budget.over(result, args.budget_gpu_hours) if args.budget_gpu_hours is not None else None
    if refused:
        print(f"run-matrix: {refused}", file=sys.stderr)
    return ExitCode.RUN_FAILED if refused or (args.strict and result.unplaced) else ExitCode.OK


def run_sync(args: argparse.Namespace) -> int:
    from runner.knowledge import ci_platforms

    if not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    planned = ci_platforms.plan(
        args.miles_root, args.output or ci_platforms.FOLDER, trust=args.trust_checkout
    )
    for problem in planned.problems:  # a workflow's name and its parser's words are the checkout's
        print(f"run-matrix: {printable(str(problem), lines=True)}", file=sys.stderr)
    if args.check:
        print(
            f"{display_path(planned.path)}: {'differs from the checkout' if planned.changed else 'in sync'}"
        )
        return ExitCode.RUN_FAILED if planned.changed else ExitCode.OK
    from runner import atomic

    atomic.write_all({planned.path: planned.text})
    print(f"{display_path(planned.path)}: written")
    return ExitCode.OK


def once(cells: list[Cell]) -> list[Cell]:
    """Each cell once when the specs named overlap (``matrices matrices/nv``); one id from two
    files is an error: a shard names cells by id."""
    seen: dict[str, Cell] = {}
    for cell in cells:
        first = seen.setdefault(cell.id, cell)
        if first.path.resolve() != cell.path.resolve():
            raise UsageError(
                f"two cells are named {cell.id}: in {display_path(first.path)} and "
                f"{display_path(cell.path)}; plan them apart"
            )
    return list(seen.values())


def _hardware(specs: list[str], cells: list[Cell]) -> set[str]:
    """The profiles a runner class may name: run-matrix's, and those of the trees the specs are in."""
    folders = [locate.BUNDLED_MATRICES / "hardware", Path("matrices") / "hardware"]
    for name in specs:
        root = locate.matrices_root(locate.find_spec(name.partition("[")[0]))
        folders += [root / "hardware"] if root else []
    return {p.stem for folder in folders for p in folder.glob("*.yaml")} | {c.profile.name for c in cells}
