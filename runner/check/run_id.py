"""G15: a launch flag that names its run per attempt (``$${run-id}``).

A run-id reference stands inside the text of a flag's value of ``args`` (or of an item of its list),
written as ``${run-id}``, and nowhere else: an env var, a verify or hook argument, a prepare step or
``model.args`` is not filled with it (only the job's flags are, when it is submitted).
"""

from __future__ import annotations

from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Problem
from runner.spec.runtime import run_id


@rule("G15")
def run_id_reference(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A run-id reference is well-formed text of a flag's value, and stands nowhere else.

    Source: run-matrix spec hygiene: the run's name is filled into flags alone, at launch
    """
    for place, text, key in cell.references:
        if not run_id.mentions(text):
            continue
        if key:
            message: str | None = f"{text!r} is a mapping key: only a flag's value takes a run's name"
        elif not run_id.in_flag(place):
            message = (
                "a run's name is filled into the flags of args alone (a value, or an item of a list), when"
                " the job is submitted: nothing fills it here"
            )
        else:
            message = run_id.problem(text)
        if message is not None:
            yield Problem("G15", message, ".".join(place), (cell.location(*place),), hint=run_id.FORM)
