"""coverage: which test runs on which hardware — the parity table kept by hand today. Pure.

A test is the base spec its cells extend (the first file of the chain under ``base/``), or the
spec itself; a row is a test and one set of axis values; a column is a hardware profile. An entry
names the software stacks of the profile its cells target (the miles version's container).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.cells.cell import Cell
from runner.errors import counted
from runner.results.markdown import escape
from schemas.ci import CI


# mutable: it accumulates a test's cells (status, reasons) while the table is built
@dataclass
class Entry:
    status: str = "missing"  # runs | unchecked | skipped | missing (the first that one of its cells is)
    cells: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    stacks: list[str] = field(default_factory=list)  # the software stacks the cells target
    miles: dict[str, str] = field(default_factory=dict)  # cell -> miles' parser's verdict, when asked
    todo: dict[str, int] = field(default_factory=dict)  # cell -> its open TODOs (port's, upgrade's), if any
    skipped: dict[str, str] = field(
        default_factory=dict
    )  # cell -> why, for a skipped cell beside one that runs

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"status": self.status, "cells": self.cells, "reasons": self.reasons}
        found["stacks"] = self.stacks
        found |= {"miles": self.miles} if self.miles else {}
        found |= {"skipped": self.skipped} if self.skipped else {}
        return {**found, "todo": self.todo} if self.todo else found


@dataclass(frozen=True)
class Row:
    test: str
    variant: str  # the axis values, as in cell ids ("fp8_rollout=true"), "" for the default
    entries: dict[str, Entry]
    ci: dict[str, CI] = field(default_factory=dict)  # each cell's ci: block


PLATFORM_AXIS = "platform"  # import's axis of a test's cells per CI platform (runner.importer.platforms)
UNCHECKED = "requirements unchecked (no --miles-root)"
_RANK = ("runs", "unchecked", "skipped", "missing")  # an entry is what the best of its cells is


def coverage(
    cells: Iterable[Cell],
    hardware: list[str],
    unmet: Mapping[str, list[str]] | None = None,
    miles: Mapping[str, str] | None = None,
) -> list[Row]:
    """The rows of ``cells``; ``unmet``: each cell's unmet requirements, checked against a checkout
    (None: no checkout, so a cell with ``requires:`` is neither said to run nor to be skipped);
    ``miles``: each cell's verdict of miles' own parser (accepts, refuses, unchecked), when asked."""
    rows: dict[tuple[str, str], Row] = {}
    for cell in cells:
        key = (_test(cell), _variant(cell))
        row = rows.setdefault(key, Row(*key, {name: Entry() for name in hardware}))
        entry = row.entries.setdefault(cell.profile.name, Entry())
        entry.cells.append(cell.id)
        if miles is not None:
            entry.miles[cell.id] = miles[cell.id]
        row.ci[cell.id] = cell.spec.ci
        if cell.spec.todo:
            entry.todo[cell.id] = len(cell.spec.todo)
        if cell.profile.stack and cell.profile.stack not in entry.stacks:
            entry.stacks.append(cell.profile.stack)
        status, reasons = _status(cell, unmet)
        entry.reasons += reasons
        if status == "skipped":
            entry.skipped[cell.id] = "; ".join(reasons)
        entry.status = min(entry.status, status, key=_RANK.index)
    return [rows[key] for key in sorted(rows)]


def _variant(cell: Cell) -> str:
    """The cell's axis values but its platform's: a test's CUDA and ROCm cells are one row, told apart
    by the hardware column."""
    values = cell.id.partition("[")[2].rstrip("]").split(",")
    return ",".join(v for v in values if v and not v.startswith(f"{PLATFORM_AXIS}="))


def _status(cell: Cell, unmet: Mapping[str, list[str]] | None) -> tuple[str, list[str]]:
    if cell.skip:
        expiry = f" (until {cell.skip.expires})" if cell.skip.expires else ""
        return "skipped", [f"{cell.skip.reason}{expiry}"]
    if unmet is None:
        return ("unchecked", []) if cell.spec.requires else ("runs", [])
    return ("skipped", unmet[cell.id]) if unmet.get(cell.id) else ("runs", [])


def _test(cell: Cell) -> str:
    base = next((path for path in cell.composed.files if path.parent.name == "base"), None)
    return base.stem if base else cell.id.partition("[")[0]


def markdown(rows: list[Row], hardware: list[str]) -> str:
    lines = ["| test | " + " | ".join(hardware) + " |", "|---|" + "---|" * len(hardware)]
    for row in rows:
        name = f"`{escape(row.test)}`" + (f" `[{escape(row.variant)}]`" if row.variant else "")
        lines.append(
            f"| {name} | "
            + " | ".join(_shown(row.entries[h], row.ci, markdown=True) for h in hardware)
            + " |"
        )
    return "\n".join(lines) + "\n"


def text(rows: list[Row], hardware: list[str]) -> str:
    lines = []
    for row in rows:
        lines.append(row.test + (f" [{row.variant}]" if row.variant else ""))
        lines += [f"  {name:<8} {_shown(row.entries[name], row.ci, markdown=False)}" for name in hardware]
    return "\n".join(lines) + "\n"


def _shown(entry: Entry, ci: dict[str, CI], markdown: bool) -> str:
    if entry.status == "missing":
        return "—" if markdown else "missing"
    cells = ", ".join(
        (f"`{escape(c)}`" if markdown else c)
        + _ci_note(ci.get(c), markdown)
        + _miles_note(entry, c)
        + _todo_note(entry, c)
        + (_skip_note(entry, c, markdown) if entry.status != "skipped" else "")
        for c in entry.cells
    )
    stacks = f" on {', '.join(entry.stacks)}" if entry.stacks else ""
    if entry.status == "runs":
        return f"runs{stacks}: {cells}"
    if entry.status == "unchecked":
        return f"{UNCHECKED}{stacks}: {cells}"
    reasons = "; ".join(entry.reasons)
    return f"skipped{stacks}: {escape(reasons) if markdown else reasons} ({cells})"


def _miles_note(entry: Entry, cell: str) -> str:
    """`` (miles: refuses)`` after a cell miles' parser was asked about."""
    return f" (miles: {entry.miles[cell]})" if cell in entry.miles else ""


def _skip_note(entry: Entry, cell: str, markdown: bool) -> str:
    """`` (skipped: why)`` after a skipped cell in an entry that runs: the entry's word is its best cell's."""
    if cell not in entry.skipped:
        return ""
    return f" (skipped: {escape(entry.skipped[cell]) if markdown else entry.skipped[cell]})"


def _todo_note(entry: Entry, cell: str) -> str:
    """`` (2 TODOs)`` after a cell that runs with decisions still open: not plainly done."""
    return f" ({counted(entry.todo[cell], 'TODO')})" if cell in entry.todo else ""


def _ci_note(ci: CI | None, markdown: bool) -> str:
    """`` (stage-c-4-gpu-mi350, 500 s, nightly)`` after a cell whose ci: block says something."""
    if ci is None or ci == CI():
        return ""
    parts = [p for p in (ci.suite or ci.runs_on, ci.est_time and f"{ci.est_time} s") if p]
    text = ", ".join(parts + (["nightly"] if ci.nightly else []))
    return f" ({escape(text) if markdown else text})" if text else ""
