"""G10, G11: verify arguments that read a hook's state (``$${hook:FUNCTION.ATTRIBUTE}``).

G10 is the form and the place: a hook reference is a whole string value of a verify entry's
``args`` (at any depth), well-formed, and nowhere else: a flag, an env var, a prepare step or a
hook's own arguments are used before the job has ended, when there is no state to read yet. G11 is
what it names: exactly one hook of this cell's ``launch.before_submit`` whose function has that name
(a hook of another cell was stopped when that cell ended; two of one name make it ambiguous).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Problem
from runner.spec.runtime import hooks


@rule("G10")
def hook_reference_form(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A hook reference is a whole, well-formed value of a verify argument, and nothing else is one.

    Source: run-matrix spec hygiene: a hook's state exists only once the job has ended (schemas/calls.py)
    """
    for place, text, key in cell.references:
        if not hooks.mentions(text):
            continue
        verify_arg = len(place) > 2 and place[0] == "verify" and place[2] == "args"
        if not verify_arg:
            why = "a hook's state is read by verify arguments only, once the job has ended; here it is used"
            yield _problem(cell, place, f"{why} before the job, where the hook has no state to read yet")
        elif key:
            yield _problem(cell, place, f"{text!r} is a mapping key: only a value reads a hook's state")
        elif hooks.REFERENCE.fullmatch(text) is None:
            yield _problem(cell, place, f"{text!r} holds a hook reference inside other text")
        elif hooks.parse(text) is None:
            yield _problem(
                cell,
                place,
                f"{text!r} names no FUNCTION.ATTRIBUTE (both plain names; the attribute public: no dots,"
                " not starting with _)",
            )


def _problem(cell: Cell, place: tuple[str, ...], message: str) -> Problem:
    return Problem("G10", message, ".".join(place), (cell.location(*place),), hint=hooks.FORM)


@rule("G11")
def hook_reference_target(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A hook reference names exactly one hook of this cell's ``launch.before_submit``.

    Source: run-matrix spec hygiene (the cell's `launch.before_submit`)
    """
    functions = hooks.hook_functions(cell.spec)
    for place, read in hooks.verify_reads(cell.spec):
        count = functions.count(read.function)
        if count == 1:
            continue
        said = f"verify.{place[1]} reads {read}"
        if count > 1:
            message = (
                f"{said}, but {count} hooks of launch.before_submit are functions named {read.function}:"
                " which one's state it reads is ambiguous"
            )
            hint = f"keep one hook named {read.function}, or call the other through a function named apart"
        else:
            known = ", ".join(dict.fromkeys(functions))
            close = difflib.get_close_matches(read.function, functions, n=1)
            guess = f"; did you mean {close[0]}?" if close else ""
            has = f"its hooks: {known}" if known else "it has no hooks"
            message = f"{said}, but launch.before_submit has no hook {read.function} ({has}){guess}"
            hint = "name the function of a hook of this cell's launch.before_submit (PATH.py:FUNCTION)"
        where = (cell.location(*place), cell.location("launch", "before_submit"))
        yield Problem("G11", message, ".".join(place), where, hint=hint)
