"""diff of the resolved specs: every key either side sets, folded per requires:/expect:/prepare:
entry, with the reason for each value (its side's why:) or absence (its side's why_not:)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runner.cells.cell import Cell
from runner.diff.difference import NO_REASON, Difference
from runner.errors import display_path
from runner.spec.load import Key, dotted, walk
from runner.spec.why import ABOUT_THE_SPEC

FOLDED = ("requires", "expect", "prepare")  # each entry is one thing; its sub-keys are one row


def spec_differences(a: Cell, b: Cell) -> Iterator[Difference]:
    left, right = _leaves(a), _leaves(b)
    entries: set[Key] = set()
    both = {k[:2] for k in left if k[0] in FOLDED} & {k[:2] for k in right if k[0] in FOLDED}
    for key in merged_order(list(left), list(right)):
        if key[0] in FOLDED and len(key) > 2 and key[:2] not in both:  # an entry one side lacks: one row
            if key[:2] not in entries:
                entries.add(key[:2])
                yield from _entry_difference(a, b, key[:2], left, right)
            continue
        va, vb = left.get(key), right.get(key)
        if va == vb or _unwritten_default(a, b, key, va, vb):
            continue
        yield Difference(dotted(key), va, vb, source(a, key), source(b, key), reason(a, b, key, vb is None))


def _unwritten_default(a: Cell, b: Cell, key: Key, va: Any, vb: Any) -> bool:
    """One side lacks the key and the other has only its default there: nobody wrote a difference."""
    if va is None:
        return key not in b.composed.provenance
    return vb is None and key not in a.composed.provenance


def _entry_difference(
    a: Cell, b: Cell, entry: Key, left: dict[Key, Any], right: dict[Key, Any]
) -> Iterator[Difference]:
    """One row for an entry only one side has: the sub-keys someone wrote, nested as written."""
    ea, eb = _written(a, entry, left), _written(b, entry, right)
    if ea == eb:
        return
    parts = tuple(name for name in dict.fromkeys([*ea, *eb]) if ea.get(name) != eb.get(name))
    yield Difference(
        dotted(entry),
        _nested(ea) or None,
        _nested(eb) or None,
        _entrysource(a, entry, ea),
        _entrysource(b, entry, eb),
        reason(a, b, (*entry, *next(iter(eb or ea)).split(".")), not eb),
        parts,
    )


def _written(cell: Cell, entry: Key, leaves: dict[Key, Any]) -> dict[str, Any]:
    """The entry's leaves that a file sets (defaults left out), by their path under the entry."""
    provenance = cell.composed.provenance
    keys = [key for key in leaves if key[: len(entry)] == entry and key in provenance]
    keys.sort(key=lambda k: provenance[k][-1].location.line or 0)  # as the file has them
    return {".".join(key[len(entry) :]): leaves[key] for key in keys}


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"extra.strategy": "block"}`` -> ``{"extra": {"strategy": "block"}}``."""
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, name = path.split(".")
        here = nested
        for parent in parents:
            here = here.setdefault(parent, {})
        here[name] = value
    return nested


def _entrysource(cell: Cell, entry: Key, written: dict[str, Any]) -> str | None:
    return source(cell, (*entry, *next(iter(written)).split("."))) if written else None


def _leaves(cell: Cell) -> dict[Key, Any]:
    data = cell.spec.model_dump(mode="python")
    about = ABOUT_THE_SPEC
    return {key: value for key, value in walk(data) if not isinstance(value, dict) and key[0] not in about}


def merged_order(first: list[Key], second: list[Key]) -> list[Key]:
    """A's keys in A's order, B's other keys after the B key before them; siblings kept together."""
    merged = list(first)
    for index, key in enumerate(second):
        if key not in merged:
            before = next((k for k in reversed(second[:index]) if k in merged), None)
            merged.insert(merged.index(before) + 1 if before else len(merged), key)
    parents = {parent: rank for rank, parent in enumerate(dict.fromkeys(k[:-1] for k in merged))}
    return sorted(merged, key=lambda k: parents[k[:-1]])


def source(cell: Cell, key: Key) -> str | None:
    steps = cell.composed.provenance.get(key)
    return f"{display_path(steps[-1].location.file)}:{steps[-1].location.line}" if steps else None


def reason(a: Cell, b: Cell, key: Key | None, b_lacks: bool) -> str:
    """Why B differs, in words a side wrote for its own side: B's reason for its value, or for
    leaving the key out (its why_not:, its !delete's why:); for a key only B has, A's reason for
    leaving it out. Never a reason written for another value (A's for its own, a base's that B's
    overlay changed): a written difference nobody explained is NO_REASON."""
    if key is None:
        return ""
    # never A's reason for setting what B removes
    found = _absence_reason(b, key) if b_lacks else _value_reason(b, key) or _absence_reason(a, key)
    written = key in a.composed.provenance or key in b.composed.provenance
    return found or (NO_REASON if written else "")


def _absence_reason(cell: Cell, key: Key) -> str:
    return _why_not(cell, key) or _deleted_because(cell, key)


def _deleted_because(cell: Cell, key: Key) -> str:
    """The reason written for a ``!delete`` of the key (or of an entry above it)."""
    for depth in range(len(key), 0, -1):
        steps = cell.composed.provenance.get(key[:depth], ())
        if steps and steps[-1].op == "delete":
            return steps[-1].why
    return ""


def _value_reason(cell: Cell, key: Key) -> str:
    """The why: of the step that gave the key its value (a ``${...}`` evaluated is no new value)."""
    steps = [step for step in cell.composed.provenance.get(key, ()) if step.op != "resolve"]
    return steps[-1].why if steps else ""


def _why_not(cell: Cell, key: Key) -> str:
    """The ``why_not:`` of the key or of an entry above it."""
    return next(
        (
            cell.spec.why_not[d]
            for d in (dotted(key[:n]) for n in range(len(key), 0, -1))
            if d in cell.spec.why_not
        ),
        "",
    )
