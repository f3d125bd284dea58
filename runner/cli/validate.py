"""run-matrix validate: check specs before any GPU is touched."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner import check, hardware, locate, pipeline
from runner.cli.output import (
    SELECT_HELP,
    add_format,
    add_miles_root,
    checked_miles_root,
    print_json,
    print_problems,
)
from runner.compose import compose
from runner.errors import Problem, SpecError, display_path, merged
from runner.load import load


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Check every cell of the given specs and folders. In a folder, hardware/ is checked as "
        "hardware profiles and base/ as specs to extend. Exit 2 when any error is found.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC|DIR|CELL")
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    add_miles_root(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    results = [*_cells(args.specs, args.k, checked_miles_root(args.miles_root)), *_supporting(args.specs)]
    problems = merged((r["cell"] or r["file"], p) for r in results for p in r["problems"])
    failed = any(p.severity == "error" or args.strict for p in problems)
    elapsed = time.perf_counter() - started
    if args.format == "json":
        print_json(
            {
                "ok": not failed,
                "seconds": round(elapsed, 4),
                "files": [{**r, "problems": [_in(p, r).to_json() for p in r["problems"]]} for r in results],
                "problems": [p.to_json() for p in problems],
            }
        )
    else:
        print_problems(problems, sys.stdout)
        cells = [r for r in results if r["cell"]]
        errors = sum(p.severity == "error" for p in problems)
        print(
            f"{len(cells)} cells, {len(results) - len(cells)} supporting files checked in {elapsed:.2f} s: "
            f"{errors} errors, {len(problems) - errors} warnings"
        )
    return 2 if failed else 0


def _in(problem: Problem, result: dict[str, Any]) -> Problem:
    """A problem of one file's result, with the one cell it was found in."""
    return replace(problem, cells=(result["cell"] or result["file"],))


def _cells(names: list[str], expression: str | None, miles_root: Path | None) -> list[dict[str, Any]]:
    """A result per cell; a spec that does not even expand is one result with its problems."""
    broken: list[tuple[Path, SpecError]] = []
    built = pipeline.select(names, expression, broken, miles_root=miles_root)
    results = [
        {"file": display_path(path), "cell": locate.cell_name(path), "problems": list(exc.problems)}
        for path, exc in broken
    ]
    for cell in built:
        results.append({"file": display_path(cell.path), "cell": cell.id, "problems": list(check.run(cell))})
    return results


def _supporting(names: list[str]) -> list[dict[str, Any]]:
    """Profiles, bases and overlay components in the given folders, each checked on its own."""
    folders = [path for name in names if (path := locate.find_spec(name.partition("[")[0])).is_dir()]
    results = []
    for path in (p for folder in folders for p in sorted(folder.rglob("*.yaml"))):
        kind = next((part for part in path.parts if part in pipeline.NOT_CELLS), None)
        if kind is None:
            continue
        problems: list[Problem] = []
        try:
            if kind == "hardware" and path.parent.name == "hardware":
                hardware.load(path.resolve())
            elif kind in ("hardware", "base"):  # a family of profiles (hardware/families/), a base spec
                compose(path)
            else:
                load(path)  # a component is a fragment: it only has to be valid YAML here
        except SpecError as exc:
            problems = list(exc.problems)
        results.append({"file": display_path(path), "cell": None, "problems": problems})
    return results
