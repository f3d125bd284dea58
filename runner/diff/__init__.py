"""diff: two cells compared the way a reviewer reads them — spec, launch, layout.

Pure: cells in, differences out. Each difference carries both values (``None`` when a
side does not have it), the file:line that set each, and the reason. The reason for B's
value is the ``why:`` of the step that set it; for B's absence, the ``why_not:`` (or the
``!delete``'s ``why:``) of B; for a key only B has, A's reason for leaving it out. A reason
written for another value (A's, or a base's that B's overlay changed) is never shown: a
difference written without one reads ``no reason given``. The sub-keys of one
``requires:``/``expect:``/``prepare:`` entry make one difference, and a default nobody wrote
is no difference. A launch row that a spec row already shows is left out when both levels
are asked for.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from runner.cells.cell import Cell
from runner.diff.difference import Diff, Difference
from runner.diff.launch import launch_differences
from runner.diff.layout import layout_differences
from runner.diff.spec import spec_differences

__all__ = ["LEVELS", "Diff", "Difference", "diff"]

LEVELS = ("spec", "launch", "layout")


def diff(a: Cell, b: Cell, allow: Sequence[str] = (), levels: Sequence[str] = LEVELS) -> Diff:
    spec = tuple(spec_differences(a, b))
    allowed = tuple(dict.fromkeys([*allow, *a.spec.allowed_deltas, *b.spec.allowed_deltas]))
    outside = tuple(d.key for d in spec if not _allowed(d, allowed))
    shown = {d.key for d in spec} if "spec" in levels else set()
    launch = tuple(launch_differences(a, b, shown)) if "launch" in levels else ()
    return Diff(
        a.id,
        b.id,
        spec if "spec" in levels else (),
        launch,
        tuple(layout_differences(a, b)) if "layout" in levels else (),
        outside,
        allowed,
    )


def _allowed(difference: Difference, globs: Sequence[str]) -> bool:
    """A glob allows a row by its key, or a folded entry by each of the sub-keys that differ."""
    keys = [difference.key, *(f"{difference.key}.{p}" for p in difference.parts)]
    if any(fnmatch.fnmatchcase(keys[0], glob) for glob in globs):
        return True
    return bool(difference.parts) and all(any(fnmatch.fnmatchcase(k, g) for g in globs) for k in keys[1:])
