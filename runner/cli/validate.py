"""run-matrix validate: check specs before any GPU is touched.

The checking is ``runner.validate.checking``'s, imported only when it has to run: while nothing a
verdict was reached from has changed, it is printed again from the cache (``runner.validate.replay``),
which is itself imported only when the cache is on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.cli.output import (
    SELECT_HELP,
    add_format,
    add_miles_python,
    add_miles_root,
    add_trust_checkout,
    checked_miles_root,
    needs_miles_root,
    print_json,
)
from runner.errors import counted

if TYPE_CHECKING:
    from runner.validate import checking


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Check every cell of the given specs and folders. In a folder, hardware/ is checked as "
        "hardware profiles and base/ as specs to extend. Exit 2 when any error is found. A verdict is "
        "kept in the cache ($RUN_MATRIX_CACHE_DIR, else $XDG_CACHE_HOME/run-matrix, else "
        "~/.cache/run-matrix) and printed again while every file, folder and module it was reached from, "
        "the date and the environment are unchanged.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC|DIR|CELL", help="spec files, folders or cell ids")
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    parser.add_argument(
        "--strict",
        action="store_true",
        help="treat warnings as errors, and warn of every value an overlay (a spec that extends another)"
        " sets, changes or deletes without a why: (rule G16)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="check everything again and keep nothing (also: RUN_MATRIX_NO_CACHE=1)",
    )
    add_miles_root(
        parser,
        "its own flags decide which flags are valid, and a verify: entry naming a test's own function"
        " (PATH.py:function) is checked against its file (rule L16)",
    )
    add_miles_python(
        parser,
        "run the --miles-root checkout's own parse_args() on each cell's argv in the sandbox;"
        " each refusal is a problem of rule miles",
    )
    parser.add_argument(
        "--history",
        metavar="PATH|URL",
        help="also read this history store and warn of each gate that cannot fail: a min/max looser than 10x "
        "the largest value recorded for the metric on the cell, a band whose floor exceeds the recorded "
        "range, a band that never had a baseline",
    )
    add_trust_checkout(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    needs_miles_root(args)
    arguments = {"specs": args.specs, "k": args.k, "miles_root": args.miles_root, "strict": args.strict}
    # miles' verdict depends on PY's packages, which the cache does not see: never replayed
    if args.fresh_process and args.miles_python is None and not _no_cache(args.no_cache):
        verdict = _replayed_or_checked(args, arguments)
    else:  # the cache's module (hashing, its records) is not even imported
        verdict = _checked(args)
    learned = _history(args) if args.history else []
    warnings = verdict["warnings"] + len(learned)
    failed = verdict["errors"] > 0 or (args.strict and warnings > 0)
    elapsed = time.perf_counter() - started
    if args.format == "json":
        found = {"history": learned} if args.history else {}
        print_json({"ok": not failed, "seconds": round(elapsed, 4), **_json(verdict), **found})
    else:
        sys.stdout.write(verdict["text"])
        for warning in learned:
            print(f"warning [history] {warning['message']}")
        print(
            f"{counted(verdict['cells'], 'cell')}, {counted(verdict['supporting'], 'supporting file')}"
            f" checked in {elapsed:.2f} s:"
            f" {counted(verdict['errors'], 'error')}, {counted(warnings, 'warning')}"
        )
    return 2 if failed else 0


def _history(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The gates the history store says cannot fail, for every cell that expands."""

    from runner import pipeline
    from runner.results.history.learn import warnings_at
    from runner.results.history.location import locate

    location = locate(args.history, os.environ, Path("run-matrix-logs"))
    return warnings_at(location, pipeline.select(args.specs, args.k, broken=[]))


def _no_cache(asked: bool) -> bool:
    """``--no-cache``, or ``RUN_MATRIX_NO_CACHE`` set (to anything but 0)."""
    return asked or os.environ.get("RUN_MATRIX_NO_CACHE", "") not in ("", "0")


def _replayed_or_checked(args: argparse.Namespace, arguments: dict[str, Any]) -> Any:
    """The kept verdict while nothing it was reached from has changed; else checked now, with a
    record of everything read, and kept."""
    from runner.validate import replay

    found_by = replay.key("validate", arguments)
    kept = _replayable(replay.load("validate", found_by))
    if kept is not None:
        return kept
    from runner.validate import checking, inputs  # the whole pipeline: only when the cache cannot answer

    with inputs.recording() as recorder:
        verdict = checking.report(args.specs, args.k, checked_miles_root(args.miles_root), strict=args.strict)
    replay.store("validate", arguments, found_by, recorder.records(), dict(verdict))
    return verdict


def _checked(args: argparse.Namespace) -> Any:
    """The verdict of checking everything now, kept nowhere."""
    from runner.validate import checking

    miles_root = checked_miles_root(args.miles_root)
    return checking.report(args.specs, args.k, miles_root, _oracle(args), args.strict)


def _oracle(args: argparse.Namespace) -> checking.MilesParser | None:
    from runner.validate import checking

    if args.miles_python is None:
        return None
    return checking.MilesParser(args.miles_python, args.trust_checkout)


def _json(verdict: Any) -> dict[str, Any]:
    return {"files": verdict["files"], "problems": verdict["problems"]}


_COUNTS = ("errors", "warnings", "cells", "supporting")


def _replayable(kept: dict[str, Any] | None) -> dict[str, Any] | None:
    """A kept verdict of the shape ``checking.report`` gives, whose counts agree with its problems
    (a damaged entry must not print fewer errors than it lists); else None: check again."""
    if kept is None or not isinstance(kept.get("text"), str):
        return None
    if not all(isinstance(kept.get(name), int) for name in _COUNTS):
        return None
    files, problems = kept.get("files"), kept.get("problems")
    if not (isinstance(files, list) and isinstance(problems, list)):
        return None
    if not all(isinstance(p, dict) for p in [*files, *problems]):
        return None
    errors = sum(p.get("severity") == "error" for p in problems)
    if (kept["errors"], kept["warnings"]) != (errors, len(problems) - errors):
        return None
    return kept
