"""L15: a spec's ``verify:`` calls a check the targeted miles offers (``verifiers:`` of its launch
conventions), with the parameters that check takes. L16: one that names a test's own function
(``PATH.py:function``), and a ``launch.before_submit`` hook or a prepare step of kind ``call`` (which
always do), names one the checkout's file defines, with the parameters it takes (read by ``ast`` from
``--miles-root``; never imported)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Location, Problem
from schemas import calls
from schemas.calls import Hook, Verify
from schemas.prepare import Call


@rule("L15")
def verify_calls_a_check_miles_offers(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A ``verify:`` entry calls a check the targeted miles has, with the parameters it takes.

    Source: `verifiers:` of the launch conventions (miles/launch/), read from the targeted miles'
    miles/utils/test_utils/
    """
    offered = cell.conventions.verifiers
    commit = (cell.conventions.miles_commit or "")[:8] or "this version"
    for name, check in cell.spec.verify.items():
        if calls.is_own(check.call):
            continue  # L16's
        key = f"verify.{name}"
        where = (cell.location("verify", name),)
        verifier = offered.get(check.call)
        if verifier is None:
            known = ", ".join(sorted(offered)) or "none"
            yield Problem(
                "L15",
                f"miles {commit} offers no check {check.call} (it offers: {known})",
                f"{key}.call",
                where,
                hint="name one of them, or a function a test of the checkout defines (PATH.py:function)",
            )
            continue
        taken = [*verifier.required, *verifier.optional]
        yield from _arguments("L15", check.call, check.args, f"{key}.args", where, taken, verifier.required)


@rule("L16")
def own_calls_name_a_function_the_test_defines(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A ``verify:`` entry, a ``launch.before_submit`` hook or a prepare ``call`` naming a test's own
    function names one the checkout's file has, taking what it is given.

    Source: the test's own file in the miles checkout (--miles-root), read with ast through
    runner/knowledge/checkout/
    """
    for name, check in cell.spec.verify.items():
        if calls.is_own(check.call):
            keys = (f"verify.{name}.call", f"verify.{name}.args")
            yield from _own_call(cell, check.call, check.args, keys, ("verify", name), AFTER_THE_JOB)
            yield from _launched_by(cell, name, check)
    for index, entry in cell.spec.launch.started():
        if isinstance(entry, Hook):
            key = f"launch.before_submit.{index}"
            written = isinstance(cell.spec.launch.before_submit[index], Hook)  # {call:, args:}
            keys = (f"{key}.call", f"{key}.args") if written else (key, key)
            place = ("launch", "before_submit", str(index))
            yield from _own_call(cell, entry.call, entry.args, keys, place, BEFORE_THE_SUBMISSION)
    for name, step in cell.spec.prepare.items():
        if isinstance(step, Call):
            keys = (f"prepare.{name}.call", f"prepare.{name}.args")
            yield from _own_call(cell, step.call, step.args, keys, ("prepare", name), AS_A_PREPARE_STEP)


def _launched_by(cell: Cell, name: str, check: Verify) -> Iterator[Problem]:
    """Each function a check's ``launched_by`` names is a top-level function of the called file that
    the called function's body names: else doing nothing in its place leaves the launches running."""
    if cell.miles_root is None or not check.launched_by:
        return  # _own_call warns that the checkout is needed
    from runner.knowledge import own_checks  # the checkout's door: only when a checkout is named

    found = own_checks.read(cell.miles_root, check.call)
    if isinstance(found, str):
        return  # no such function: _own_call's error
    called = calls.function_of(check.call)
    for launcher in check.launched_by:
        if launcher not in found.functions:
            known = ", ".join(found.functions)
            why = f"{calls.file_of(check.call)} has no top-level function {launcher} (it has {known})"
        elif launcher not in found.names:
            why = f"{called}() never names {launcher}: doing nothing in its place leaves its launches to run"
        else:
            continue
        where = (cell.location("verify", name, "launched_by"),)
        hint = "name the functions by which the called function launched, as its body calls them"
        yield Problem("L16", why, f"verify.{name}.launched_by", where, hint=hint)


AFTER_THE_JOB = "after the job"
BEFORE_THE_SUBMISSION = "between `ray start` and the submission"
AS_A_PREPARE_STEP = "as a prepare step, on this machine before the cell's Ray head starts"


def _own_call(
    cell: Cell,
    call: str,
    args: Mapping[str, object],
    keys: tuple[str, str],  # where the call is written, where its arguments are
    place: tuple[str, ...],
    called: str,
) -> Iterator[Problem]:
    where = (cell.location(*place),)
    if cell.miles_root is None:
        yield Problem(
            "L16",
            f"{call} is a function of the checkout's own, which could not be checked without one",
            keys[0],
            where,
            "warning",
            hint="give the checkout (--miles-root DIR or $MILES_ROOT) to check that the file defines it"
            " with these parameters; run needs the checkout and checks it there",
        )
        return
    from runner.knowledge import own_checks  # the checkout's door: only when a checkout is named

    found = own_checks.read(cell.miles_root, call)
    if isinstance(found, str):
        hint = "name a top-level function of a file of the checkout, the path relative to its root"
        yield Problem("L16", found, keys[0], where, hint=hint)
        return
    taken = [*found.required, *found.optional]
    yield from _arguments("L16", call, args, keys[1], where, taken, found.required, called, found.any_keyword)


def _arguments(
    rule_id: str,
    call: str,
    args: Mapping[str, object],
    key: str,
    where: tuple[Location, ...],
    taken: Sequence[str],
    required: Sequence[str],
    called: str = AFTER_THE_JOB,
    any_keyword: bool = False,
) -> Iterator[Problem]:
    """``args`` against the parameters the function takes (by keyword, all required ones)."""
    unknown = [] if any_keyword else [arg for arg in args if arg not in taken]
    missing = [arg for arg in required if arg not in args]
    if not unknown and not missing:
        return
    said = [f"no parameter {', '.join(unknown)}"] if unknown else []
    said += [f"{', '.join(missing)} not given"] if missing else []
    given = "exactly these keyword arguments" if args or called == AFTER_THE_JOB else "no arguments"
    yield Problem(
        rule_id,
        f"{calls.function_of(call)}() takes {', '.join(taken) or 'no parameters'}; {'; '.join(said)}",
        key,
        where,
        hint=f"{call} is called with {given} {called}",
    )
