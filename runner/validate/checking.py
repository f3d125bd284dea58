"""validation: every cell and supporting file a ``validate`` names, checked; the report it prints.

A report is plain JSON-able data (``Report``), so ``validate`` can print it as text or JSON and
keep it in its cache (``runner.validate.replay``) to print again while nothing it read has changed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict

from runner import check, pipeline
from runner.cells import build, hardware
from runner.cells.cell import Cell
from runner.errors import Problem, SpecError, display_path, merged
from runner.memos import memo
from runner.spec import locate
from runner.spec.compose import compose
from runner.spec.load import load


class Report(TypedDict):
    """What ``validate`` prints: the problems as text and as JSON, per file and merged."""

    errors: int
    warnings: int
    cells: int
    supporting: int
    text: str  # the problems as text, one block each (the summary line is printed beside)
    files: list[dict[str, Any]]  # per cell or supporting file, its problems as JSON
    problems: list[dict[str, Any]]  # merged: a problem of several cells once


@dataclass(frozen=True)
class MilesParser:
    """``--miles-python``: the interpreter that runs the checkout's own parse_args() on every cell."""

    python: Path
    trust: bool = False


def report(
    names: list[str],
    expression: str | None,
    miles_root: Path | None,
    parser: MilesParser | None = None,
    strict: bool = False,
) -> Report:
    """Check every cell named (spec files, folders, cell ids; ``-k``) and, in folders, the profiles,
    bases and components; ``miles_root``'s own flags decide which flags are valid when given, and its
    own parser, run by ``parser``'s interpreter, has the last word on each cell. ``strict``: the
    review bar's rules too (``check.STRICT``)."""
    with memo():  # the tree is only read here (the report too names its files): each path resolved once
        results = [*_cells(names, expression, miles_root, parser, strict), *_supporting(names)]
        problems = merged((r["cell"] or r["file"], p) for r in results for p in r["problems"])
        errors = sum(p.severity == "error" for p in problems)
        cells = sum(1 for r in results if r["cell"])
        return Report(
            errors=errors,
            warnings=len(problems) - errors,
            cells=cells,
            supporting=len(results) - cells,
            text="".join(f"{p}\n" for p in problems),
            files=[{**r, "problems": [_in(p, r).to_json() for p in r["problems"]]} for r in results],
            problems=[p.to_json() for p in problems],
        )


def _in(problem: Problem, result: dict[str, Any]) -> Problem:
    """A problem of one file's result, with the one cell it was found in."""
    return replace(problem, cells=(result["cell"] or result["file"],))


def _cells(
    names: list[str],
    expression: str | None,
    miles_root: Path | None,
    parser: MilesParser | None,
    strict: bool,
) -> list[dict[str, Any]]:
    """A result per cell; a spec that does not even expand is one result with its problems."""
    broken: list[tuple[Path, SpecError]] = []
    built = pipeline.select(names, expression, broken, miles_root=miles_root)
    results = [
        {"file": display_path(path), "cell": locate.cell_name(path), "problems": list(exc.problems)}
        for path, exc in broken
    ]
    said = _miles_said(built, miles_root, parser)
    for cell in built:
        found = [*cell.notes, *check.run(cell, strict), *said.get(cell.id, [])]
        results.append({"file": display_path(cell.path), "cell": cell.id, "problems": found})
    return results


def _miles_said(
    cells: list[Cell], miles_root: Path | None, parser: MilesParser | None
) -> dict[str, list[Problem]]:
    """miles' own verdicts per cell id (none without ``--miles-python``)."""
    if parser is None or miles_root is None or not cells:
        return {}
    from runner import miles_parser  # renders and starts a sandbox: only when asked

    return miles_parser.check(cells, parser.python, miles_root, parser.trust)


def _supporting(names: list[str]) -> list[dict[str, Any]]:
    """Profiles, bases and overlay components in the given folders, each checked on its own."""
    named = [locate.find_spec(name.partition("[")[0]) for name in names]
    files = [p for path in named for p in (sorted(path.rglob("*.yaml")) if path.is_dir() else [path])]
    results = []
    for path in files:
        if build.in_hardware(path):  # a profile (or family) also when its file is named alone
            kind: str | None = "hardware"
        elif path in named:  # any other file named alone is a spec: a cell of _cells
            continue
        else:
            kind = next((part for part in path.parts if part in build.NOT_CELLS), None)
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
