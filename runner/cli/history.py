"""run-matrix history: the recorded runs of cells, one metric over them with its corridor; and
``history untrust RUN_ID --reason ...`` (``trust`` undoes it) to take a run out of baselines."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.cli.output import SELECT_HELP, add_format, print_json
from runner.errors import UsageError, counted
from runner.results.history.checks import printable

if TYPE_CHECKING:
    from runner.results.history.location import Location
    from runner.results.history.reads import Point, Reader

TRUST_ACTIONS = ("untrust", "trust")


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="The runs the history store recorded for each selected cell (default: every cell it "
        "knows), oldest first, with one metric (--metric; default: the first gated one) and the corridor it "
        "was judged against; in a terminal, a plot (a store with no runs yet says so, exit 0). "
        "`history untrust RUN_ID --reason TEXT` takes a run out "
        "of every baseline (recorded; `history trust RUN_ID --reason TEXT` undoes it). `history "
        "recommend CELL|SPEC [--metric M] [--rate P] [--write]` proposes a band for each gated metric from "
        "its trusted runs on the cell's hardware and stack: a Student-t prediction interval for the "
        "next run at a false-failure rate (--rate), with the figures it came from and "
        "Megatron's rule of thumb on the same runs; --write puts each band in the spec's expect: with a "
        "why: citing those figures (the file edited in place, its comments kept).",
    )
    parser.add_argument(
        "names", nargs="*", metavar="CELL|SPEC", help="cell ids or globs of the store, or specs"
    )
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    parser.add_argument("--metric", metavar="M", help="the metric to show (default: the first gated one)")
    parser.add_argument("--last", type=int, default=20, metavar="N", help="the last N runs of each cell (20)")
    parser.add_argument(
        "--history",
        metavar="PATH|URL",
        help="the store (default: $RUN_MATRIX_HISTORY_URL, else run-matrix-logs/history.sqlite)",
    )
    parser.add_argument("--png", type=Path, metavar="FILE", help="draw the plot into a PNG (one cell)")
    parser.add_argument("--html", type=Path, metavar="FILE", help="write a page: each cell's plot and runs")
    parser.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="draw the terminal plot (default: when stdout is a terminal)",
    )
    parser.add_argument("--reason", help="why a run is untrusted (or trusted again)")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.01,
        metavar="P",
        help="recommend: the false-failure rate of a healthy run the band allows (0.01)",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="recommend: put each band in the cell's spec (expect.M.band, and a why: citing its figures), "
        "editing the file in place; a link, or a spec the edit cannot reach, is refused",
    )
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.last < 1:
        raise UsageError(f"--last {args.last}: give a positive number of runs")
    location = _locate(args.history)
    if args.names and args.names[0] in TRUST_ACTIONS:
        return _set_trust(location, args)
    if args.names and args.names[0] == "recommend":
        from runner.cli import recommend

        return recommend.run(location, args)
    if args.write:
        raise UsageError("--write is for `history recommend`: it writes the bands it proposes")
    from runner.results.history.reads import Reader

    reader = Reader.open(location)  # reads without SQLAlchemy's import: see runner.results.history.query
    try:
        return _show(reader, args)
    finally:
        reader.close()


def _locate(option: str | None) -> Location:
    from runner.results.history.location import locate

    return locate(option, os.environ, Path("run-matrix-logs"))


def _set_trust(location: Location, args: argparse.Namespace) -> int:
    from runner.results.history.store import Store

    action, *rest = args.names
    if len(rest) != 1 or not args.reason:
        raise UsageError(f"usage: run-matrix history {action} RUN_ID --reason TEXT")
    from runner.results.history.reads import Reader

    reader = Reader.open(location)  # a store of run-matrix's at this version: Store.open would make one
    reader.close()
    if reader.empty:
        raise UsageError(f"no run {rest[0]!r} in the history store {location.shown}: it holds no runs yet")
    store = Store.open(location)
    try:
        before = store.set_trust(rest[0], action == "trust", args.reason)
    finally:
        store.close()
    now = "trusted" if action == "trust" else "untrusted"
    was = "already " if before["trusted"] == (action == "trust") else ""
    stored = f"{printable(str(before['cell']))}, {printable(str(before['status']))}"
    print(f"run {rest[0]} ({stored}) is {was}{now}: {args.reason}")
    return 0


def _show(reader: Reader, args: argparse.Namespace) -> int:
    from runner.results.history import reads

    ids = _cell_ids(args.names, args.k, reads.cells(reader))
    sections: list[tuple[str, str, list[Point]]] = []
    for cell in ids:
        metric, found = reads.points(reader, cell, args.metric, args.last)
        if args.metric and found and args.metric not in reads.metrics(reader, cell):
            known = ", ".join(map(printable, reads.metrics(reader, cell))) or "none"
            raise UsageError(
                f"--metric {args.metric}: {printable(cell)} never recorded it (recorded: {known})"
            )
        sections.append((cell, metric or "", found))
    if args.png is not None:
        _png(sections, args.png)
    if args.html is not None:
        from runner.results.history import plot

        plot.html_page([s for s in sections if s[2]], args.html)
    if args.format == "json":
        print_json(
            {
                "cells": [
                    {"id": c, "metric": m, "runs": [p.to_json() for p in found]} for c, m, found in sections
                ]
            }
        )
        return 0
    if not ids:
        print(f"no runs recorded yet in the history store {reader.location.shown}")
    _print(sections, sys.stdout.isatty() if args.plot is None else args.plot)
    return 0


def _png(sections: list[tuple[str, str, list[Point]]], path: Path) -> None:
    from runner.results.history import plot

    drawn = [s for s in sections if s[2]]
    if len(drawn) != 1:
        raise UsageError(f"--png draws one cell; {len(drawn)} have runs: name one (or use --html)")
    plot.png(drawn[0][2], drawn[0][0], drawn[0][1], path)


def _print(sections: list[tuple[str, str, list[Point]]], draw: bool) -> None:
    from rich.console import Console

    from runner.results.history import plot
    from runner.results.history.view import table

    console = Console(highlight=False, soft_wrap=True)
    for cell, metric, found in sections:
        console.print(table(cell, metric, found))
        if draw and found and metric:
            console.out(plot.terminal(found, cell, metric, width=min(console.width, 120)), highlight=False)


def _cell_ids(names: list[str], expression: str | None, stored: list[str]) -> list[str]:
    """The cells to show: ids or id globs of the store, else specs (with ``-k``, as ``run`` selects)."""
    if not names and not expression:
        return stored  # an empty store is shown as a cell with no runs is: nothing recorded yet
    if names and all(_stored(name, stored) for name in names) and not expression:
        return [cell for name in names for cell in _stored(name, stored)]
    if (
        not names
        and expression is not None
        and (_stored(expression, stored) or re.search(r"[/*?]", expression))
    ):
        found = _stored(expression, stored)
        if not found:
            raise UsageError(
                f"-k {expression!r} matches none of the {counted(len(stored), 'cell')} in the store"
            )
        return found
    from runner import pipeline

    if not names:
        raise UsageError(
            f"-k {expression!r} is an expression over axis values: name the specs it selects from"
        )
    return [cell.id for cell in pipeline.select(names, expression)]


def _stored(pattern: str, stored: list[str]) -> list[str]:
    if pattern in stored:
        return [pattern]
    if not re.search(r"[*?]", pattern):
        return []
    regex = re.compile(".*".join(".".join(map(re.escape, part.split("?"))) for part in pattern.split("*")))
    return [cell for cell in stored if regex.fullmatch(cell)]
