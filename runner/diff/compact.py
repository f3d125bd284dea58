"""compact: a diff as one list for a PR description, whatever its format — no sources, and neighbours
that change for one reason in one row (``args.perf.{a, b}``). Pure: a Diff in, rows out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.diff.difference import Diff, Difference


@dataclass(frozen=True)
class Row:
    """One row: its key (``args.perf.{a, b}`` for a group), the keys it stands for, each side's values
    (one per key; None where a side lacks it) and the one reason."""

    key: str
    keys: tuple[str, ...]
    a: tuple[Any, ...]
    b: tuple[Any, ...]
    why: str

    def to_json(self) -> dict[str, Any]:
        one = len(self.keys) == 1
        return {
            "key": self.key,
            "keys": list(self.keys),
            "a": self.a[0] if one else list(self.a),
            "b": self.b[0] if one else list(self.b),
            "why": self.why,
        }


def rows(result: Diff) -> list[Row]:
    """Every level's differences, spec first, neighbours of one reason grouped."""
    found = []
    for group in _same_reason_groups([*result.spec, *result.launch, *result.layout]):
        key = group[0].key
        if len(group) > 1:
            parent = key.rpartition(".")[0]
            key = f"{parent}.{{{', '.join(d.key.rpartition('.')[2] for d in group)}}}"
        keys = tuple(d.key for d in group)
        found.append(Row(key, keys, tuple(d.a for d in group), tuple(d.b for d in group), group[0].why))
    return found


def to_json(result: Diff) -> dict[str, Any]:
    return {
        "a": result.a,
        "b": result.b,
        "rows": [row.to_json() for row in rows(result)],
        "allowed": list(result.allowed),
        "outside_allowed": list(result.outside_allowed),
    }


def _same_reason_groups(differences: list[Difference]) -> list[list[Difference]]:
    """Neighbours under one parent, set or unset alike on each side, for the same written reason."""
    groups: list[list[Difference]] = []
    for d in differences:
        last = groups[-1][-1] if groups else None
        if last is not None and _one_change(last, d):
            groups[-1].append(d)
        else:
            groups.append([d])
    return groups


def _one_change(x: Difference, y: Difference) -> bool:
    parent = x.key.rpartition(".")[0]
    return (  # changes nobody explained are never one reason
        bool(parent)
        and x.explained
        and parent == y.key.rpartition(".")[0]
        and x.why == y.why
        and (x.a is None, x.b is None) == (y.a is None, y.b is None)
        and not (x.parts or y.parts)
    )
