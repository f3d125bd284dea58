"""port, after the overlay is written: reasons it inherits that cite numbers the port changed.

A reason can only be given where a key is set, so such a key is set again to what the source
wrote (a ``${...}`` stays a reference) with a reason that says what became of it and quotes
the source's. Pure: two cells in, changes out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from runner.cells.cell import Cell
from runner.port.rules import Change

_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_RESTATED = ("args", "env", "cluster")  # where the overlay can set a key again to give it a new reason


def stale_reasons(source: Cell, ported: Cell, written: set[str]) -> tuple[Change, ...]:
    """The source's reasons that cite a number the port changed, rewritten for the ported cell."""
    old, new = _leaf_values(source), _leaf_values(ported)
    changed = {str(v) for k, v in old.items() if _is_count(v) and new.get(k) != v}
    found: list[Change] = []
    for key, steps in source.composed.provenance.items():
        why = next((step.why for step in reversed(steps) if step.why), "")
        if key[0] not in _RESTATED or ".".join(key) in written or key not in new or key not in old:
            continue
        if not why or not changed & set(_NUMBER.findall(why)):
            continue
        value = f"kept at {new[key]}" if new[key] == old[key] else f"{old[key]} → {new[key]}"
        reason = f"{value} on {ported.profile.name}; the source's reason was for {source.profile.name}: {why}"
        found.append(Change(key, _raw(source, key), reason, "stale-reason"))
    return tuple(found)


def _leaf_values(cell: Cell) -> dict[tuple[str, ...], Any]:
    data = cell.spec.model_dump(mode="python")
    return {key: value for key, value in _walk(data, ()) if not isinstance(value, dict)}


def _walk(data: dict[str, Any], prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, value in data.items():
        yield (*prefix, name), value
        if isinstance(value, dict):
            yield from _walk(value, (*prefix, name))


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _raw(cell: Cell, key: tuple[str, ...]) -> Any:
    """The value as the spec wrote it: a reference stays a reference."""
    here: Any = cell.composed.data
    for name in key:
        here = here[name]
    return here
