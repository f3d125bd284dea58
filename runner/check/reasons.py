"""G16: an overlay says what it changes and why (``validate --strict`` alone).

An overlay is a spec file that ``extends:`` another. Its values are what it sets, changes or
deletes relative to what it extends; each needs a ``why:`` (its own, or one of a mapping above
it), or ``diff`` can only say "no reason given" beside it. A value the base sets for the first
time, a value an overlay repeats unchanged, and the keys about the spec (``description:``, ...)
need none; neither does a matrix's ``adjust:`` overlay, which extends nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Problem, SpecError
from runner.spec.load import Key, dotted, load
from runner.spec.provenance import Provenance, Step
from runner.spec.why import ABOUT_THE_SPEC

_DID = {
    "set": "adds a key its bases do not set",
    "override": "changes the value its bases set",
    "replace": "replaces the value its bases set",
    "delete": "deletes the value its bases set",
}


@rule("G16", strict=True)
def overlay_values_have_reasons(cell: Cell, _: Layout) -> Iterator[Problem]:
    """Every value an overlay of the cell's chain writes without a reason, once per written line.

    Source: run-matrix's review bar (`validate --strict`): an overlay's change carries its `why:`
    """
    overlays = {file for file in cell.composed.files if _extends(file)}
    if not overlays:
        return
    provenance = cell.composed.provenance
    whole = dict.fromkeys(_whole(key, step, provenance) for key, step in _unexplained(provenance, overlays))
    order = {file: index for index, file in enumerate(cell.composed.files)}
    for key, step in sorted(
        ((k, _last(provenance[k])) for k in whole), key=lambda found: _place(found, order)
    ):
        yield Problem(
            "G16",
            f"this overlay {_DID[step.op]}, without a why: (diff says 'no reason given')",
            dotted(key),
            (step.location,),
            "warning",
            f"give it its reason beside it (why: {{{key[-1]}: ...}}), or in a why: of a mapping above it",
        )


def _place(found: tuple[Key, Step], order: dict[Path, int]) -> tuple[int, int]:
    location = found[1].location
    return order.get(location.file, -1), location.line or 0


def _unexplained(provenance: Provenance, overlays: set[Path]) -> Iterator[tuple[Key, Step]]:
    """Each key whose value (or absence) an overlay wrote as a change, without a reason."""
    for key, steps in provenance.items():
        written = [step for step in steps if step.op != "resolve"]
        step = written[-1] if written else None
        if step is None or step.why or step.location.file not in overlays or key[0] in ABOUT_THE_SPEC:
            continue
        if isinstance(step.value, dict):  # a mapping: its keys are the values
            continue
        before = written[-2] if len(written) > 1 else None
        if before is None or before.op == "delete" or step.op == "delete" or before.value != step.value:
            yield key, step


def _whole(key: Key, step: Step, provenance: Provenance) -> Key:
    """The outermost key the same line of the same file introduced or removed whole (a new entry
    of ``prepare:``, a deleted mapping): one problem for it, not one per key inside it."""
    while len(key) > 1:
        above = [s for s in provenance.get(key[:-1], ()) if s.op != "resolve"]
        removed_with_it = bool(above) and above[-1] == step and step.op == "delete"
        introduced_here = len(above) == 1 and above[0].location.file == step.location.file
        if not (removed_with_it or introduced_here):
            break
        key = key[:-1]
    return key


def _last(steps: tuple[Step, ...]) -> Step:
    return [step for step in steps if step.op != "resolve"][-1]


def _extends(file: Path) -> bool:
    """Whether ``file`` extends another spec (a file gone since it was composed: no overlay read)."""
    try:
        return "extends" in load(file).data
    except SpecError:
        return False
