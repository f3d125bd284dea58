"""check: rules over a cell, each a small generator of problems with a stable id.

Ids: F* flags against the miles version's flag catalog, G* spec hygiene, L* miles,
S* SGLang (one rollout engine), M* Megatron (the actor), P* platform capabilities from the
hardware profile. L/S/M ids are those of shared/reference/parallelism-rules.md. Rules never
raise; ``run`` collects every problem so a user sees them all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from runner.cell import Cell
from runner.errors import Location, Problem, Severity
from runner.layout import Layout, layout

Rule = Callable[[Cell, Layout], Iterator[Problem]]
RULES: dict[str, Rule] = {}


def rule(rule_id: str) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        assert rule_id not in RULES, f"rule {rule_id} registered twice"
        RULES[rule_id] = function
        return function

    return register


def run(cell: Cell) -> Iterator[Problem]:
    facts = layout(cell)
    for check in RULES.values():
        yield from check(cell, facts)


def problem(
    rule_id: str,
    cell: Cell,
    flags: tuple[str, ...],
    message: str,
    hint: str = "",
    severity: Severity = "error",
) -> Problem:
    """A problem about miles flags: the key of the first, the file:line of every one that is set."""
    written = [cell.where(name) for name in flags if cell.flag(name) is not None]
    return Problem(
        rule_id,
        message,
        key_of(cell, flags[0]) if flags else "",
        tuple(dict.fromkeys(written)) or (Location(cell.path),),
        severity,
        hint,
    )


def key_of(cell: Cell, name: str) -> str:
    found = cell.spelling(name)
    if found is None:
        return f"args.*.{name}"
    group, written = found
    return f"model_args.{written}" if group is None else f"args.{group}.{written}"


# The rule modules register themselves on import.
from runner.check import argv, megatron, miles, platform, sglang, spec  # noqa: E402, F401
