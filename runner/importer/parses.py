"""parses: what import wrote, given to the checkout's own parser (``--miles-python``), after writing.

An import is faithful: the spec renders what the test launches, so a launch miles' parser refuses at
the checkout's version is the test's, written as it is. Each refusal is told at the test's
``execute_train`` line, with miles' message and the spec line of the flag it names (``runner.miles_parser``
is the one door to the parser; every written spec of a folder or suite goes through one check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from runner import miles_parser, pipeline
from runner.cells.cell import Cell
from runner.errors import Location, Problem
from runner.importer.folder import case_file
from runner.importer.suite import SuiteImported
from schemas.matrix import AxisValue

OUTCOME = "miles refuses"  # a suite test's outcome: written, but its launch does not parse
HINT = (
    "written as the test launches it; miles' own parse_args() refuses that launch at this checkout:"
    " change the flag it names in the test (then import again) or in the spec"
)
Launches = Sequence[tuple[Mapping[str, AxisValue], Location]]


@dataclass(frozen=True)
class Parser:
    """``--miles-python PY`` and the checkout whose parser it runs."""

    python: Path
    miles_root: Path
    trust: bool = False


@dataclass(frozen=True)
class Written:
    """One imported test: the spec written for it, and the test line that launches each of its cells."""

    test: Path
    spec: Path
    launches: Launches


def refusals(written: Sequence[Written], parser: Parser) -> dict[Path, list[Problem]]:
    """miles' refusals of what was written, per test (a test miles accepts is absent)."""
    cells = {item.test: pipeline.cells(item.spec, miles_root=parser.miles_root) for item in written}
    every = [cell for found in cells.values() for cell in found]
    if not every:
        return {}
    said = miles_parser.check(every, parser.python, parser.miles_root, parser.trust)
    found: dict[Path, list[Problem]] = {}
    for item in written:
        problems = [
            _at_test(p, cell, item)
            for cell in cells[item.test]
            for p in said[cell.id]
            if p.severity == "error"
        ]
        if problems:
            found[item.test] = problems
    return found


def _at_test(problem: Problem, cell: Cell, item: Written) -> Problem:
    """miles' problem with the test's launching line first; the spec's lines follow as "also at"."""
    line = _launched_at(cell, item)
    message = f"the launch of cell {cell.id} is written, but {problem.message}"
    return replace(problem, message=message, locations=(line, *problem.locations), hint=HINT)


def _launched_at(cell: Cell, item: Written) -> Location:
    """The line of the test whose call became ``cell`` (the first whose axis values the cell has)."""
    for combo, at in item.launches:
        if all(cell.axes.get(axis) == value for axis, value in combo.items()):
            return at
    return Location(item.test)


def confirm_suite(
    result: SuiteImported, tests: Path, output: Path, parser: Parser
) -> dict[Path, list[Problem]]:
    """Every spec a suite import wrote, checked at once; each refused test's outcome becomes ``OUTCOME``
    with its first refusal as the reason (the summary's line for it)."""
    written = [
        Written(tests / relative / name, output / relative / case_file(Path(name)), imported.launches)
        for relative, found in result.folders.items()
        for name, imported in found.cases.items()
    ]
    found = refusals(written, parser)
    for test, problems in found.items():
        result.outcomes[test] = (OUTCOME, str(problems[0]).splitlines()[0])
    return found
