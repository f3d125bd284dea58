"""The translation rules of port: a spec's cells -> the changes that move them to another platform.

Translation rules are data (miles/porting.yaml): each ``when`` is an expression over the
source cell (``flag(NAME)``, ``env(NAME)``), the ``source`` and ``target`` profiles and the
``model`` preset; what fires becomes a change with its ``because``. Rules are evaluated on
every cell of the source: changes all cells need go into the overlay itself, changes only some
cells need go into a component the overlay applies to those cells (``matrix.adjust``).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import simpleeval

from runner.cells.cell import Cell
from runner.errors import SpecError
from runner.memos import remember
from runner.spec import locate
from runner.spec.compose import compose
from runner.spec.model import build
from schemas import HardwareProfile
from schemas.porting import Porting, PortRule, RequirementRule

PORTING = locate.PROJECT / "miles" / "porting.yaml"
_TEMPLATE = re.compile(r"^\$\{(.+)\}$")


@dataclass(frozen=True)
class Change:
    """One edit of the overlay: set or delete a flag (args.GROUP.NAME) or an env var (env.NAME)."""

    key: tuple[str, ...]
    value: Any  # None: delete
    reason: str
    rule: str

    @property
    def dotted(self) -> str:
        return ".".join(self.key)


@dataclass(frozen=True)
class PortPlan:
    """What the overlay says: changes for every cell, extra changes per other cell, TODOs."""

    source: str
    target: HardwareProfile
    common: tuple[Change, ...]
    per_cell: dict[str, tuple[Change, ...]]  # cell id -> changes only that cell needs
    axes: dict[str, dict[str, Any]]  # cell id -> its axis values
    todo: dict[str, str] = field(default_factory=dict)


@remember("shipped", "miles/porting.yaml, modelled")
def porting() -> Porting:
    """miles/porting.yaml, modelled but not resolved: its ${...} are evaluated per port."""
    composed = compose(PORTING)
    return build(Porting, composed.data, composed)


def plan(cells: list[Cell], target: HardwareProfile, rules: Porting) -> PortPlan:
    default = next((c for c in cells if "[" not in c.id), cells[0])
    changes = {cell.id: _changes(cell, target, rules.rules) for cell in cells}
    common = changes[default.id]
    per_cell = {
        cid: tuple(c for c in found if c not in common) for cid, found in changes.items() if cid != default.id
    }
    scope = _Scope(default, target)
    todo = {
        f"env.{name}": review.note
        for review in rules.review_env
        if scope.evaluate(review.when, "review_env")
        for name in review.names
        if name in default.spec.env
    }
    dropped, open_entries = _requirements(default, scope, rules.requirements)
    todo.update(open_entries)
    axes = {cell.id: dict(cell.axes) for cell in cells}
    per_cell_only = {k: v for k, v in per_cell.items() if v}
    return PortPlan(default.id, target, (*common, *dropped), per_cell_only, axes, todo)


def _requirements(
    cell: Cell, scope: _Scope, rules: list[RequirementRule]
) -> tuple[tuple[Change, ...], dict[str, str]]:
    """The source's requires:/expect: entries a rule drops (as deletions) or leaves open (as TODOs)."""
    dropped: list[Change] = []
    todo: dict[str, str] = {}
    decided: set[str] = set()
    for rule in rules:
        if not scope.evaluate(rule.when, rule.id):
            continue
        words = [str(scope.fill(word, rule.id)) for word in rule.mentions]
        entries: Mapping[str, Any] = cell.spec.requires if rule.section == "requires" else cell.spec.expect
        for name, entry in entries.items():
            dotted = f"{rule.section}.{name}"
            if dotted in decided or not _selects(
                rule, words, name, entry, _reasons(cell, (rule.section, name))
            ):
                continue
            decided.add(dotted)
            if rule.action == "drop":
                dropped.append(Change((rule.section, name), None, rule.because, rule.id))
            else:
                todo[dotted] = rule.because
    return tuple(dropped), todo


def _reasons(cell: Cell, prefix: tuple[str, ...]) -> str:
    """Every ``why:`` written for the key or anything under it."""
    found = {
        step.why: None
        for key, steps in cell.composed.provenance.items()
        if key[: len(prefix)] == prefix
        for step in steps
        if step.why
    }
    return " ".join(found)


def _selects(rule: RequirementRule, words: list[str], name: str, entry: Any, reason: str) -> bool:
    if any(fnmatch.fnmatchcase(name, glob) for glob in rule.names):
        return True
    text = " ".join([name, json.dumps(entry.model_dump(mode="json")), reason])
    return any(
        re.search(rf"(?<![A-Za-z0-9]){re.escape(w)}(?![A-Za-z0-9])", text, re.IGNORECASE) for w in words
    )


def _changes(cell: Cell, target: HardwareProfile, rules: list[PortRule]) -> tuple[Change, ...]:
    scope = _Scope(cell, target)
    found: list[Change] = []
    for rule in rules:
        if not scope.evaluate(rule.when, rule.id):
            continue

        def change(key: tuple[str, ...], value: Any, rule: PortRule = rule) -> None:
            found.append(Change(key, value, rule.because, rule.id))

        for flag in rule.delete:
            if cell.spec.args.flags().get(flag) is not None:
                change(("args", group_of(cell, flag), flag), None)
        for flag, value in rule.set.items():
            change(("args", group_of(cell, flag), flag), scope.fill(value, rule.id))
        for name in (str(scope.fill(n, rule.id)) for n in rule.delete_env):
            if name in cell.spec.env:
                change(("env", name), None)
        for name, value in rule.set_env.items():
            change(("env", str(scope.fill(name, rule.id))), str(scope.fill(value, rule.id)))
    return tuple(found)


def group_of(cell: Cell, flag: str) -> str:
    """The flag's group in the source, else where miles' tests keep such flags."""
    for group, flags in cell.spec.args.groups():
        if flag in flags:
            return group
    return "sglang" if flag.startswith(("sglang-", "rollout-")) else "misc"


class _Scope:
    """What a rule's expressions see: flag() and env() of the source cell, the profiles, the model."""

    def __init__(self, cell: Cell, target: HardwareProfile) -> None:
        self.names = {
            "source": cell.profile.model_dump(mode="python"),
            "target": target.model_dump(mode="python"),
            "model": {"sparse_attention": cell.preset.sparse_attention, "type": cell.preset.type},
        }
        self.functions = {"flag": cell.flag, "env": cell.spec.env.get, "int": int, "str": str, "len": len}

    def evaluate(self, expression: str, rule: str) -> Any:
        evaluator = simpleeval.EvalWithCompoundTypes(names=self.names, functions=self.functions)
        try:
            return evaluator.eval(expression)
        except (
            simpleeval.InvalidExpression,
            SyntaxError,
            TypeError,
            ValueError,
            KeyError,
            IndexError,
        ) as exc:
            raise SpecError.one(
                "port",
                f"porting rule {rule!r} cannot evaluate {expression!r}: {exc}",
                key=f"rules.{rule}",
                at=[compose(PORTING).location(("rules",))],
            ) from None

    def fill(self, value: Any, rule: str) -> Any:
        """``${target...}`` is evaluated now; other references (``${visible_devices}``) stay for the spec."""
        match = _TEMPLATE.match(value) if isinstance(value, str) else None
        if not match:
            return value
        try:
            return self.evaluate(match.group(1), rule)
        except SpecError:
            return value


def after_refit(ported: Cell, target: HardwareProfile, rules: Porting) -> tuple[Change, ...]:
    """The ``after_refit`` rules that fire on the re-fitted cell (e.g. sequence-parallel at TP 1)."""
    return _changes(ported, target, rules.after_refit)
