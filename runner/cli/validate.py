"""run-matrix validate: check specs before any GPU is touched."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from runner import locate, pipeline
from runner.cli.output import add_format, print_json, print_problems
from runner.compose import compose
from runner.errors import Problem, SpecError, display_path


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="check specs (files or folders) and report every problem",
        description="Check every cell of the given specs and folders. In a folder, hardware/ is checked as "
        "hardware profiles and base/ as specs to extend. Exit 2 when any error is found.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC|DIR")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    paths = [locate.find_spec(name) for name in args.specs]
    results: list[dict[str, Any]] = []
    for path in pipeline.spec_files(paths):
        results.append(_validate_cell(path))
    for path in _supporting_files(paths):
        results.append(_validate_supporting(path))
    problems = [p for r in results for p in r["problems"]]
    failed = any(p.severity == "error" or args.strict for p in problems)
    elapsed = time.perf_counter() - started
    if args.format == "json":
        print_json(
            {
                "ok": not failed,
                "seconds": round(elapsed, 4),
                "files": [{**r, "problems": [p.to_json() for p in r["problems"]]} for r in results],
                "problems": [p.to_json() for p in problems],
            }
        )
    else:
        import sys

        print_problems(problems, sys.stdout)
        cells = [r for r in results if r["cell"]]
        errors = sum(p.severity == "error" for p in problems)
        warnings = len(problems) - errors
        print(
            f"{len(cells)} cells, {len(results) - len(cells)} supporting files checked in {elapsed:.2f} s: "
            f"{errors} errors, {warnings} warnings"
        )
    return 2 if failed else 0


def _validate_cell(path: Path) -> dict[str, Any]:
    try:
        cell, problems = pipeline.checked(path)
        return {"file": display_path(path), "cell": cell.id, "problems": problems}
    except SpecError as exc:
        return {"file": display_path(path), "cell": locate.cell_name(path), "problems": list(exc.problems)}


def _supporting_files(paths: list[Path]) -> list[Path]:
    """Profiles and bases in the given folders: checked on their own, not as cells."""
    found = [p for folder in paths if folder.is_dir() for p in sorted(folder.rglob("*.yaml"))]
    return [p for p in found if set(p.parts) & {"hardware", "base"}]


def _validate_supporting(path: Path) -> dict[str, Any]:
    problems: list[Problem] = []
    try:
        if "hardware" in path.parts:
            pipeline.load_profile(path.resolve())
        else:
            compose(path)
    except SpecError as exc:
        problems = list(exc.problems)
    return {"file": display_path(path), "cell": None, "problems": problems}
