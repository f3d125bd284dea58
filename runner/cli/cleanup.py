"""run-matrix cleanup: stop what runs that died (SIGKILL, the OOM killer) left running.

Every run records what it starts (its local Ray heads and their temp dirs, its prepare
steps' process sessions, the jobs it submitted) and holds a lock while it lives; `run` does
this clean-up itself before it starts. Processes are stopped only when proven the dead
run's (start time, command line, the run's id in their environment); jobs on a cluster
given with --ray-address are stopped through Ray's job API, never by touching its processes.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from runner.cli.output import add_format, print_json
from runner.errors import ExitCode


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Find the records of runs that died (their lock is free) under $RUN_MATRIX_STATE_DIR "
        "(default: $XDG_STATE_HOME/run-matrix or ~/.local/state/run-matrix) and stop what they left: "
        "their local Ray heads (by process session, after checking each process is theirs), temp dirs, "
        "prepare steps, and their jobs (through Ray's job API). Runs still alive are never touched. "
        "Exit 0 when nothing is left, 3 when something could not be stopped.",
    )
    parser.add_argument("--dry-run", action="store_true", help="only say what dead runs left")
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from runner.run.cleanup import clean
    from runner.run.record import state_dir

    found = clean(state_dir(os.environ), dry_run=args.dry_run)
    if args.format == "json":
        print_json({"dry_run": args.dry_run, "runs": [c.to_json() for c in found]})
    else:
        for cleaned in found:
            print(cleaned.describe().removeprefix("run-matrix: "))
        if not found:
            print("no dead runs left anything behind")
    left = any(c.left for c in found) and not args.dry_run
    return int(ExitCode.ENVIRONMENT if left else ExitCode.OK)
