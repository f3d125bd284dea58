"""What one runner was given: the cell ids of ``--cells FILE`` or of shard K of a plan.

``--cells FILE``: a JSON list of ids, a JSON object with ``cells`` (a GitHub matrix entry,
``toJSON(matrix)``), or one id a line (blank lines and ``#`` comments ignored).
``--shard-of PLAN K``: the plan ``ci plan --format json`` wrote, or its ``--format github`` form.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.cells.cell import Cell
from runner.errors import UsageError, counted, did_you_mean
from runner.spec import documents
from runner.spec.paths import MAX_FILE_BYTES, read_text
from schemas.ci_plan import CiPlan


@dataclass(frozen=True)
class Given:
    """Cell ids in the order to run them; the specs the plan was made from (None: not known)."""

    ids: tuple[str, ...]
    specs: tuple[str, ...] | None = None
    hashes: dict[str, str] | None = None  # content hash at planning time, per cell


def cells_file(path: Path) -> Given:
    text = read_text(path)
    try:
        data: Any = documents.json_data(text, MAX_FILE_BYTES)
    except documents.Unreadable as error:
        if error.budget:
            raise UsageError(f"--cells {path}: JSON nested too deeply") from None
        lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
        return Given(_unique(path, [line for line in lines if line]))
    if isinstance(data, dict) and "cells" in data:
        data = data["cells"]
    if not (isinstance(data, list) and all(isinstance(item, str) for item in data)):
        raise UsageError(
            f'--cells {path}: expected a JSON list of cell ids (or {{"cells": [...]}}), or one cell id a line'
        )
    return Given(_unique(path, data))


def shard_of(path: Path, number: int) -> Given:
    data = _json(path)
    if isinstance(data, dict) and "include" in data:  # the --format github matrix
        if not isinstance(data["include"], list):
            raise UsageError(f"--shard-of {path}: include is not a list of matrix entries")
        entries = [e for e in data["include"] if isinstance(e, dict) and e.get("shard") == number]
        known = [e.get("shard") for e in data["include"] if isinstance(e, dict)]
        if len(entries) != 1 or not isinstance(entries[0].get("cells"), list):
            raise UsageError(f"--shard-of {path}: no shard {number} (shards: {_listed(known)})")
        return Given(_unique(path, [str(c) for c in entries[0]["cells"]]))
    try:
        plan = CiPlan.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(
            f"--shard-of {path}: not a plan of `run-matrix ci plan --format json|github` "
            f"({where}: {first['msg']})"
        ) from None
    found = [s for s in plan.shards if s.shard == number]
    if not found:
        raise UsageError(
            f"--shard-of {path}: no shard {number} (shards: {_listed([s.shard for s in plan.shards])})"
        )
    hashes = {c.id: c.content_hash for c in plan.cells}
    return Given(_unique(path, found[0].cells), tuple(plan.specs), hashes)


def chosen(cells: Sequence[Cell], given: Given, source: str) -> list[Cell]:
    """The cells ``given`` names, in its order; an id no cell has is an error naming the closest."""
    by_id = {cell.id: cell for cell in cells}
    missing = [name for name in given.ids if name not in by_id]
    if missing:
        hint = did_you_mean(missing[0], by_id)
        raise UsageError(
            f"{source}: {counted(len(missing), 'cell')} the selected specs do not have:"
            f" {', '.join(missing[:5])}"
            + (f" ({hint})" if hint else "")
            + (" — give the specs the plan was made from" if given.specs is None else "")
        )
    return [by_id[name] for name in given.ids]


def changed(cells: Sequence[Cell], given: Given) -> list[str]:
    """Cells whose content changed since the plan was made (a warning: est_time may be off)."""
    if given.hashes is None:
        return []
    return [c.id for c in cells if given.hashes.get(c.id, c.content_hash) != c.content_hash]


def _json(path: Path) -> Any:
    try:
        return documents.json_data(read_text(path), MAX_FILE_BYTES)
    except documents.Unreadable as error:
        if error.budget:
            raise UsageError(f"--shard-of {path}: JSON nested too deeply") from None
        raise UsageError(f"--shard-of {path}: not JSON ({error.reason})") from None


def _unique(path: Path, ids: list[str]) -> tuple[str, ...]:
    """The ids, each once; none is a selection too (a shard or a change-based plan with nothing to run)."""
    twice = sorted(name for name, seen in Counter(ids).items() if seen > 1)
    if twice:
        raise UsageError(f"{path}: {', '.join(twice[:5])} named twice; a shard runs each cell once")
    return tuple(ids)


def _listed(numbers: Sequence[Any]) -> str:
    return (
        ", ".join(str(n) for n in numbers[:20]) + (" ..." if len(numbers) > 20 else "") if numbers else "none"
    )
