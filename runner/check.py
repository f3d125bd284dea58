"""check: rules over a cell, each a small generator of problems with a stable id.

Rules never raise; they yield. ``run`` collects them all so a user sees every
problem of a spec at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from runner.errors import Problem

if TYPE_CHECKING:
    from runner.pipeline import Cell

Rule = Callable[["Cell"], Iterator[Problem]]
RULES: list[Rule] = []
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def rule(function: Rule) -> Rule:
    RULES.append(function)
    return function


def run(cell: Cell) -> Iterator[Problem]:
    for each in RULES:
        yield from each(cell)


@rule
def flag_in_one_group(cell: Cell) -> Iterator[Problem]:
    """G1: a flag lives in exactly one group; miles would get it twice."""
    seen: dict[str, str] = {}
    for group, flags in cell.spec.args.groups():
        for name in flags:
            if name in seen:
                first = seen[name]
                yield Problem(
                    "G1",
                    f"--{name} is set in two groups, args.{first} and args.{group}",
                    f"args.{group}.{name}",
                    (cell.location("args", first, name), cell.location("args", group, name)),
                    hint=f"keep it in one group (delete the other with `{name}: !delete`).",
                )
            seen.setdefault(name, group)
    for name in cell.preset.model_args.keys() & seen.keys():
        if cell.spec.args.flags()[name] != cell.preset.model_args[name]:
            yield Problem(
                "G2",
                f"--{name} {cell.spec.args.flags()[name]} contradicts MODEL_ARGS of"
                f" {cell.preset.type} (--{name} {cell.preset.model_args[name]}); argparse keeps the last",
                f"args.{seen[name]}.{name}",
                (cell.location("args", seen[name], name),),
                severity="warning",
            )


@rule
def secrets_are_references(cell: Cell) -> Iterator[Problem]:
    """G3: a secret is written as ${NAME}, never as its value."""
    for name in cell.conventions.secrets:
        value = cell.spec.env.get(name)
        if value is not None and not _REFERENCE.match(value):
            yield Problem(
                "G3",
                f"env.{name} holds a literal secret; it would be printed and stored in reports",
                f"env.{name}",
                (cell.location("env", name),),
                hint=f"write $${{{name}}} and set {name} in the environment that runs run-matrix.",
            )
