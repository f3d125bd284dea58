"""L15: a spec's ``verify:`` calls a check the targeted miles offers (``verifiers:`` of its launch
conventions), with the parameters that check takes. L16: one that names a test's own function
(``PATH.py:function``) names one the checkout's file defines, with the parameters it takes (read
by ``ast`` from ``--miles-root``; never imported)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from runner.cell import Cell
from runner.check import rule
from runner.errors import Problem
from runner.knowledge import own_checks
from runner.layout import Layout
from schemas import calls
from schemas.spec import Verify


@rule("L15")
def verify_calls_a_check_miles_offers(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A ``verify:`` entry calls a check the targeted miles has, with the parameters it takes."""
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
        yield from _arguments(
            "L15", cell, name, check, [*verifier.required, *verifier.optional], verifier.required
        )


@rule("L16")
def verify_calls_a_function_the_test_defines(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A ``verify:`` entry naming a test's own function names one the checkout's file has."""
    for name, check in cell.spec.verify.items():
        if not calls.is_own(check.call):
            continue
        where = (cell.location("verify", name),)
        if cell.miles_root is None:
            yield Problem(
                "L16",
                f"{check.call} is a function of the checkout's own, which could not be checked without one",
                f"verify.{name}.call",
                where,
                "warning",
                hint="give the checkout (--miles-root DIR or $MILES_ROOT) to check that the file defines it"
                " with these parameters; run needs the checkout and checks it there",
            )
            continue
        found = own_checks.read(cell.miles_root, check.call)
        if isinstance(found, str):
            hint = "name a top-level function of a file of the checkout, the path relative to its root"
            yield Problem("L16", found, f"verify.{name}.call", where, hint=hint)
            continue
        taken = [*found.required, *found.optional]
        yield from _arguments("L16", cell, name, check, taken, found.required, found.any_keyword)


def _arguments(
    rule_id: str,
    cell: Cell,
    name: str,
    check: Verify,
    taken: Sequence[str],
    required: Sequence[str],
    any_keyword: bool = False,
) -> Iterator[Problem]:
    """The entry's ``args`` against the parameters the function takes (by keyword, all required ones)."""
    unknown = [] if any_keyword else [arg for arg in check.args if arg not in taken]
    missing = [arg for arg in required if arg not in check.args]
    if not unknown and not missing:
        return
    said = [f"no parameter {', '.join(unknown)}"] if unknown else []
    said += [f"{', '.join(missing)} not given"] if missing else []
    yield Problem(
        rule_id,
        f"{calls.function_of(check.call)}() takes {', '.join(taken) or 'no parameters'}; {'; '.join(said)}",
        f"verify.{name}.args",
        (cell.location("verify", name),),
        hint=f"{check.call} is called with exactly these keyword arguments after the job",
    )
