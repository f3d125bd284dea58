"""L15: a spec's ``verify:`` calls a check the targeted miles offers (``verifiers:`` of its launch
conventions), with the parameters that check takes."""

from __future__ import annotations

from collections.abc import Iterator

from runner.cell import Cell
from runner.check import rule
from runner.errors import Problem
from runner.layout import Layout


@rule("L15")
def verify_calls_a_check_miles_offers(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A ``verify:`` entry calls a check the targeted miles has, with the parameters it takes."""
    offered = cell.conventions.verifiers
    commit = (cell.conventions.miles_commit or "")[:8] or "this version"
    for name, check in cell.spec.verify.items():
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
                hint="name one of them, or run the check in a test of the checkout's own",
            )
            continue
        taken = [*verifier.required, *verifier.optional]
        unknown = [arg for arg in check.args if arg not in taken]
        missing = [arg for arg in verifier.required if arg not in check.args]
        if unknown or missing:
            said = [f"no parameter {', '.join(unknown)}"] if unknown else []
            said += [f"{', '.join(missing)} not given"] if missing else []
            yield Problem(
                "L15",
                f"{check.call.rsplit('.', 1)[1]}() takes {', '.join(taken)}; {'; '.join(said)}",
                f"{key}.args",
                where,
                hint=f"{check.call} is called with exactly these keyword arguments after the job",
            )
