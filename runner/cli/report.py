"""run-matrix report --html DIR: the results page a team looks at, a static site from the specs and
the history store (parity, each cell's metrics and runs, streaks and flaky cells, the GPU budget)."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.cli.output import SELECT_HELP, add_format, print_json
from runner.errors import SpecError, UsageError, counted, display_path

if TYPE_CHECKING:
    from runner.results.site.records import History


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Writes a static site (plain HTML and inline SVG: no server, nothing fetched when it is "
        "read, from file:// as from GitHub Pages or a CI artifact): the parity of every test on every "
        "hardware with each cell's latest status, one page per cell (its gated metrics with band and bounds, "
        "its runs, its launch and the diff against its sibling on the other platform), the failure streaks "
        "and flaky cells, and the GPU-hours per suite, hardware and week. Prints the index page's path "
        "(--format json: the pages, the flaky cells, the failing ones). See docs/results-page.md.",
    )
    parser.add_argument(
        "specs", nargs="*", default=["matrices"], metavar="SPEC|DIR", help="spec files or folders"
    )
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    parser.add_argument(
        "--html", type=Path, required=True, metavar="DIR", help="the folder to write the site to"
    )
    parser.add_argument(
        "--history",
        metavar="PATH|URL",
        help="the store (default: $RUN_MATRIX_HISTORY_URL, else run-matrix-logs/history.sqlite; that default "
        "file missing: a site without runs)",
    )
    parser.add_argument(
        "--since", type=_date, metavar="DATE", help="only the runs recorded from DATE on (YYYY-MM-DD)"
    )
    parser.add_argument(
        "--flaky-runs", type=int, default=10, metavar="N", help="the runs the flip rate looks back over (10)"
    )
    parser.add_argument(
        "--flaky-flips",
        type=int,
        default=3,
        metavar="K",
        help="flips in those runs that make a cell flaky (3)",
    )
    parser.add_argument(
        "--budget-gpu-hours",
        type=float,
        metavar="H",
        help="the GPU-hours a week may spend; weeks over it are marked",
    )
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no date: give YYYY-MM-DD") from None


def run(args: argparse.Namespace) -> int:
    if args.flaky_runs < 2 or not 1 <= args.flaky_flips < args.flaky_runs:
        raise UsageError(
            f"--flaky-runs {args.flaky_runs} --flaky-flips {args.flaky_flips}: give at least 2 runs and "
            "between 1 flip and one fewer than the runs"
        )
    from runner import atomic, pipeline
    from runner.cells import hardware
    from runner.redact import Redactor
    from runner.results.site.build import Options, site
    from runner.results.site.parity import Refused

    broken: list[tuple[Path, SpecError]] = []  # shown on the parity page: an expired skip is one
    cells = pipeline.select(args.specs, args.k, broken)
    vendors = {name: profile.vendor for name, profile in hardware.profiles().items()}
    history = _history(args.history, args.since)
    options = Options(datetime.date.today(), args.flaky_runs, args.flaky_flips, args.budget_gpu_hours)
    refused = [Refused(display_path(path), str(exc), _expired(exc)) for path, exc in broken]
    built = site(cells, vendors, history, options, Redactor.of(os.environ), refused)
    atomic.write_all({args.html / name: text for name, text in built.files.items()})
    wrote = f"{counted(len(built.files), 'page')} ({counted(built.runs, 'run')})"
    print(f"run-matrix: wrote {wrote} to {display_path(args.html)}", file=sys.stderr)
    index = display_path(args.html / "index.html")
    if args.format == "text":
        print(index)
        return 0
    failing = [{"cell": cell, "failed_in_a_row": runs} for cell, runs in built.failing]
    pages = sorted(built.files)
    print_json({"index": index, "pages": pages, "runs": built.runs, "flaky": built.flaky, "failing": failing})
    return 0


def _expired(exc: SpecError) -> bool:
    return any(problem.rule == "skip-expired" for problem in exc.problems)


def _history(option: str | None, since: datetime.date | None) -> History:
    from runner.results.history.location import ENV, locate
    from runner.results.history.reads import Reader
    from runner.results.site import records

    location = locate(option, os.environ, Path("run-matrix-logs"))
    defaulted = option is None and not os.environ.get(ENV)
    if defaulted and location.sqlite_file is not None and not location.sqlite_file.exists():
        print(f"run-matrix: no history store at {location.shown}: the site shows no runs", file=sys.stderr)
        return records.History()
    reader = Reader.open(location)
    try:
        return records.read(reader, since)
    finally:
        reader.close()
