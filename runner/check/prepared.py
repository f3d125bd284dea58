"""G12, G13: launch flags that take a prepare call's result (``$${prepared:FUNCTION}``).

G12 is the form and the place: a prepared reference stands inside the text of a flag's value of
``args`` (or of an item of its list), well-formed, and nowhere else: an env var, a verify or hook
argument, a prepare step or ``model.args`` is not filled with it (only the job's flags are, when it
is submitted). G13 is what it names: exactly one prepare step of kind call of this cell whose
function has that name (none: nothing returns it; two make it ambiguous).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Location, Problem
from runner.spec.runtime import prepared


@rule("G12")
def prepared_reference_form(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A prepared reference is well-formed text of a flag's value, and stands nowhere else.

    Source: run-matrix spec hygiene: a prepare call's result is filled into flags alone, at launch
    """
    for place, text, key in cell.references:
        if not prepared.mentions(text):
            continue
        if key:
            yield _problem(
                cell, place, f"{text!r} is a mapping key: only a flag's value takes a prepare call's result"
            )
        elif not prepared.in_flag(place):
            yield _problem(
                cell,
                place,
                "a prepare call's result is filled into the flags of args alone (a value, or an item of a"
                " list), when the job is submitted: nothing fills it here",
            )
        else:
            wrong = prepared.problem(text)
            if wrong is not None:
                yield _problem(cell, place, wrong)


def _problem(cell: Cell, place: tuple[str, ...], message: str) -> Problem:
    return Problem("G12", message, ".".join(place), (cell.location(*place),), hint=prepared.FORM)


@rule("G13")
def prepared_reference_target(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A prepared reference names the function of exactly one prepare step of kind call of this cell.

    Source: run-matrix spec hygiene (the cell's `prepare:` steps)
    """
    steps = prepared.call_steps(cell.spec)
    functions = [function for _, function in steps]
    for place, function in prepared.flag_references(cell.spec):
        count = functions.count(function)
        if count == 1:
            continue
        said = f"--{place[2]} takes the result of {function}"
        if count > 1:
            named = [name for name, f in steps if f == function]
            steps_named = ", ".join(f"prepare.{name}" for name in named)
            message = (
                f"{said}, but {count} prepare steps of kind call are functions named {function}"
                f" ({steps_named}): which one's result it takes is ambiguous"
            )
            hint = f"keep one prepare call of {function}, or call the other through a function named apart"
            also = tuple(cell.location("prepare", name) for name in named)
        else:
            known = ", ".join(dict.fromkeys(functions))
            close = difflib.get_close_matches(function, functions, n=1)
            guess = f"; did you mean {close[0]}?" if close else ""
            has = f"its calls: {known}" if known else "it has no prepare step of kind call"
            message = f"{said}, but no prepare step of kind call of the cell calls {function} ({has}){guess}"
            hint = "name the function of a prepare step of kind call of this cell (call: PATH.py:FUNCTION)"
            also = _prepare(cell)
        yield Problem("G13", message, ".".join(place), (cell.location(*place), *also), hint=hint)


def _prepare(cell: Cell) -> tuple[Location, ...]:
    """Where the cell's prepare steps were written, when it has any."""
    return (cell.location("prepare"),) if cell.spec.prepare else ()
