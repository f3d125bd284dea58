"""G8, G9: flag values read at launch from a file an earlier cell wrote (``$${read-integer:PATH}``).

G8 looks at one cell: a read reference is a whole flag value (or list item) of ``args``, its
conversion one run-matrix knows, its path absolute and plain. G9 looks across the cells of a spec,
in the order they run: an earlier cell's output flag (``--save``: ``output_flags`` of the launch
conventions) names a folder holding the file, and the reading cell's own prepare does not remove it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Problem, counted
from runner.spec.runtime import reads
from schemas.prepare import Remove

FORM = "write the whole value as $${read-integer:/absolute/path} (a file an earlier cell writes)"


def flag_reads(cell: Cell) -> Iterator[tuple[str, str, reads.Read]]:
    """(group, flag, read) of every whole read reference among the cell's flags, in launch order."""
    for group, flags in cell.spec.args.groups():
        for name, value in flags.items():
            for item in value if isinstance(value, list) else [value]:
                found = reads.parse(item) if isinstance(item, str) else None
                if found is not None:
                    yield group, name, found


@rule("G8")
def read_references(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A value read at launch names a plain absolute file and a known conversion, as a whole value.

    Source: run-matrix's launch-time reads (runner/spec/runtime/reads.py)
    """
    for group, flags in cell.spec.args.groups():
        for name, value in flags.items():
            key = f"args.{group}.{name}"
            for item in value if isinstance(value, list) else [value]:
                yield from _one(cell, key, ("args", group, name), item)
    for name, value in cell.spec.env.items():
        if reads.mentions(value):
            yield _problem(cell, ("env", name), "a value read at launch is a flag's, not an env var's")


def _one(cell: Cell, key: str, place: tuple[str, ...], item: Any) -> Iterator[Problem]:
    if not isinstance(item, str) or not reads.mentions(item):
        return
    found = reads.parse(item)
    if found is None:
        yield _problem(cell, place, f"{item!r} holds a read reference inside other text")
        return
    for wrong in (reads.conversion_problem(found.conversion), reads.path_problem(found.path)):
        if wrong:
            yield _problem(cell, place, f"reads its value at launch, but {wrong}")


def _problem(cell: Cell, place: tuple[str, ...], message: str) -> Problem:
    key = ".".join(place)
    return Problem("G8", message, key, (cell.location(*place),), hint=FORM)


def across(cells: Sequence[Cell]) -> list[Problem]:
    """G9 over a spec's cells, in the order they run."""
    found: list[Problem] = []
    for index, cell in enumerate(cells):
        for group, name, read in flag_reads(cell):
            if reads.conversion_problem(read.conversion) or reads.path_problem(read.path):
                continue  # G8 says what is wrong with it
            found += _unwritten(cell, cells[:index], group, name, read)
            found += _removed(cell, group, name, read)
    return list(dict.fromkeys(found))


def _unwritten(cell: Cell, earlier: Sequence[Cell], group: str, name: str, read: reads.Read) -> list[Problem]:
    for before in earlier:
        for output in before.conventions.output_flags:
            folder = before.flag(output)
            if isinstance(folder, str) and folder.startswith("/") and reads.under(read.path, folder):
                return []
    outputs = ", ".join(f"--{flag}" for flag in cell.conventions.output_flags) or "none"
    where = (
        f"the {counted(len(earlier), 'cell')} before {cell.id}"
        if earlier
        else f"no cell runs before {cell.id}"
    )
    return [
        Problem(
            "G9",
            f"--{name} reads {read.path} at launch, which no earlier cell of the spec writes ({where};"
            f" the folders they write: {outputs})",
            f"args.{group}.{name}",
            (cell.location("args", group, name),),
            hint="read a file under an earlier cell's --save folder; the cells of a spec run in order",
        )
    ]


def _removed(cell: Cell, group: str, name: str, read: reads.Read) -> list[Problem]:
    for step_name, step in cell.spec.prepare.items():
        if not isinstance(step, Remove):
            continue
        for path in step.paths:
            if reads.under(read.path, path):
                return [
                    Problem(
                        "G9",
                        f"--{name} reads {read.path} at launch, but prepare.{step_name} of the same cell"
                        f" removes {path} before it launches",
                        f"prepare.{step_name}",
                        (cell.location("prepare", step_name), cell.location("args", group, name)),
                        hint=f"leave {path} out of this cell's prepare (prepare: {{{step_name}: !delete}})",
                    )
                ]
    return []
