"""resolve: evaluate ``${...}`` references and arithmetic, safely.

``${cluster.gpus_per_node // 2}`` is evaluated by simpleeval (never ``eval``):
names are the spec's top-level keys plus a few derived facts (``profile``, the
hardware profile; ``visible_devices``, ``"0,1,...,N-1"`` for N GPUs per node).
A reference whose whole text is a dotted key may use hyphens
(``${args.perf.tensor-model-parallel-size}``); inside arithmetic, index instead
(``${args.perf['tensor-model-parallel-size'] * 2}``). ``$${`` writes a literal
``${`` (for shell references such as ``$${WANDB_API_KEY}``).

A value that is exactly one ``${...}`` keeps the type of its result; a
reference inside longer text is formatted into it. Cycles are errors naming
the chain. Braces inside an expression (``${ {'a': 2}['a'] }``) are matched, never left as
text; what the evaluator refuses, or what exceeds its budgets, is an error at the key.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import simpleeval

from runner.errors import Location, SpecError, did_you_mean, newest_first
from runner.spec import expressions
from runner.spec.compose import Composed, Step
from runner.spec.load import Key, dotted
from runner.spec.references import DOTTED, FUNCTION_NAMES, FUNCTIONS, Reference, is_set, pieces, referred

_BUDGETED = expressions.budgeted(FUNCTIONS)

Derived = Mapping[str, Callable[["Resolver"], Any]]


@dataclass(frozen=True)
class Resolved:
    """A spec's data with every ``${...}`` replaced, and the composition it came from."""

    data: dict[str, Any]
    composed: Composed


def resolve(
    composed: Composed,
    derived: Derived,
    shared: dict[Key, Any] | None = None,
    varying: frozenset[str] = frozenset(),
) -> Resolved:
    """Evaluate every ``${...}`` of ``composed``; record each evaluation as a step.

    Cells of one matrix share most values: ``shared`` carries, from cell to cell, every value
    that depends on none of the ``varying`` names (``matrix``), so each is evaluated once.
    """
    resolver = Resolver(composed, derived, shared, varying)
    data = resolver.resolve_tree(composed.data, ())
    return Resolved(data, resolver.composed)


class Resolver:
    def __init__(
        self,
        composed: Composed,
        derived: Derived,
        shared: dict[Key, Any] | None = None,
        varying: frozenset[str] = frozenset(),
    ) -> None:
        self.composed = composed
        self.derived = derived
        self.shared = {} if shared is None else shared
        self.varying = varying
        self.tainted: set[Key] = set()  # keys whose value depends on a varying name
        self.done: dict[Key, Any] = {}
        self.stack: list[Key] = []
        self.referrer: Key = ()  # the key whose expression is being evaluated
        self.evaluator = expressions.evaluator(names=lambda node: self.name(node), functions=_BUDGETED)

    def resolve_tree(self, node: dict[str, Any], prefix: Key) -> dict[str, Any]:
        resolved = {}
        for name, value in node.items():
            key = (*prefix, name)
            if isinstance(value, dict):
                resolved[name] = self.resolve_tree(value, key)
            else:  # most leaves are literals: only references need the evaluator
                resolved[name] = self.leaf(key) if _has_reference(value) else value
        return resolved

    def lookup(self, key: Key, referrer: Key) -> Any:
        """The resolved value at ``key``: a view for a mapping, the value for a leaf."""
        if key and key[0] in self.varying:
            self.tainted.update(self.stack)
        node: Any = self.composed.data
        for depth, name in enumerate(key):
            if not isinstance(node, dict) or name not in node:
                siblings = node if isinstance(node, dict) else {}
                raise self.error(
                    referrer,
                    f"refers to {dotted(key)!r}, which is not set",
                    did_you_mean(name, siblings) if depth else did_you_mean(name, [*siblings, *self.derived]),
                )
            node = node[name]
        return _View(self, key, referrer) if isinstance(node, dict) else self.leaf(key)

    def leaf(self, key: Key) -> Any:
        if key[0] in self.varying:  # the axis values themselves
            self.tainted.update((key, *self.stack))
        if key in self.done:
            if key in self.tainted:
                self.tainted.update(self.stack)
            return self.done[key]
        if key in self.shared:
            value = self.shared[key]
            self.record(key, self._raw(key), value)
            self.done[key] = value
            return value
        if key in self.stack:
            cycle = [*self.stack[self.stack.index(key) :], key]
            chain = " -> ".join(f"{dotted(k)} ({self.composed.location(k)})" for k in cycle)
            raise self.error(
                key, f"references form a cycle: {chain}", "break the cycle with a literal value."
            )
        self.stack.append(key)
        try:
            raw = self._raw(key)
            value = self.evaluate(raw, key)
        finally:
            self.stack.pop()
        if _has_reference(raw):
            self.record(key, raw, value)
        self.done[key] = value
        if key not in self.tainted:
            self.shared[key] = value
        return value

    def _raw(self, key: Key) -> Any:
        raw: Any = self.composed.data
        for name in key:
            raw = raw[name]
        return raw

    def evaluate(self, raw: Any, key: Key) -> Any:
        if isinstance(raw, list):
            return [self.evaluate(item, key) for item in raw]
        if isinstance(raw, dict):  # a mapping inside a list (a verify argument's JSON)
            return {name: self.evaluate(item, key) for name, item in raw.items()}
        if not isinstance(raw, str) or "$" not in raw:
            return raw
        try:
            parts = pieces(raw)
        except ValueError as exc:
            raise self.error(key, str(exc), "a reference is ${...}; write $${ for a literal ${") from None
        if len(parts) == 1 and isinstance(parts[0], Reference) and not parts[0].literal:
            return self.expression(parts[0].text, key)
        text = "".join(self.piece(piece, key) for piece in parts)
        try:
            return expressions.checked(text)
        except expressions.BudgetExceeded as exc:
            raise self.error(key, f"refused: {exc}", rule="budget") from None

    def piece(self, piece: str | Reference, key: Key) -> str:
        if isinstance(piece, str):
            return piece
        if piece.literal:  # $${...}: a literal ${...}
            return "${" + piece.text + "}"
        return str(self.expression(piece.text, key))

    def expression(self, text: str, key: Key) -> Any:
        reference = DOTTED.match(text)
        if reference:  # the common case, ${vars.models}: a lookup, no evaluator needed
            path = tuple(reference.group(1).split("."))
            plain = not any(part.startswith("_") for part in path)
            if plain and (path[0] in self.composed.data or "-" in reference.group(1)):
                return _plain(self.lookup(path, key))
        outer, self.referrer = self.referrer, key
        try:
            tree = expressions.parse(text, FUNCTION_NAMES)
            return expressions.checked(_plain(self.evaluator.eval(text, previously_parsed=tree)))
        except SpecError:
            raise
        except expressions.BudgetExceeded as exc:
            raise self.error(key, f"refused ${{{text}}}: {exc}", rule="budget", sources=text) from None
        except (simpleeval.InvalidExpression, expressions.NotAllowed) as exc:
            raise self.error(key, f"cannot evaluate ${{{text}}}: {exc}", sources=text) from None
        except (SyntaxError, ArithmeticError, TypeError, ValueError) as exc:
            message = f"cannot evaluate ${{{text}}}: {type(exc).__name__}: {exc}"
            raise self.error(key, message, sources=text) from None
        finally:
            self.referrer = outer

    def name(self, node: ast.Name) -> Any:
        referrer = self.referrer
        if node.id in self.varying:
            self.tainted.update(self.stack)
        if node.id in self.composed.data:
            return self.lookup((node.id,), referrer)
        if node.id in self.derived:
            return self.derived[node.id](self)
        raise self.error(
            referrer,
            f"refers to {node.id!r}, which is not set",
            did_you_mean(node.id, [*self.composed.data, *self.derived]),
        )

    def record(self, key: Key, raw: Any, value: Any) -> None:
        steps = self.composed.provenance.get(key, ())
        where = steps[-1].location if steps else Location(self.composed.path)
        self.composed.provenance[key] = (*steps, Step(where, "resolve", _Evaluated(raw, value)))

    def error(
        self, key: Key, message: str, hint: str = "", rule: str = "reference", sources: str = ""
    ) -> SpecError:
        """An error at ``key``; with ``sources`` (the expression), headlined at the most recently
        written of ``key`` and the keys the expression reads (the user's overlay, usually)."""
        places = [replace(self.composed.location(key), key=dotted(key))]
        for source in referred(sources) if sources else ():
            if is_set(self.composed.data, source):
                places.append(replace(self.composed.location(source), key=dotted(source)))
        first, *others = newest_first(places, self.composed.files)
        return SpecError.one(rule, message, key=first.key, at=[replace(first, key=""), *others], hint=hint)


@dataclass(frozen=True)
class _Evaluated:
    """An ``${expr:...}`` and its value, as a message shows them."""

    expression: Any
    value: Any

    def __str__(self) -> str:
        return f"{self.expression} = {self.value}"


class _View:
    """A mapping of the spec as seen from an expression: ``cluster.gpus_per_node``."""

    def __init__(self, resolver: Resolver, key: Key, referrer: Key) -> None:
        self._resolver, self._key, self._referrer = resolver, key, referrer

    def __getattr__(self, name: str) -> Any:
        return self._resolver.lookup((*self._key, name), self._referrer)

    __getitem__ = __getattr__

    def unwrap(self) -> dict[str, Any]:
        node: Any = self._resolver.composed.data
        for name in self._key:
            node = node[name]
        return self._resolver.resolve_tree(node, self._key)


def _has_reference(raw: Any) -> bool:
    if isinstance(raw, list):
        return any(_has_reference(item) for item in raw)
    if isinstance(raw, dict):
        return any(_has_reference(item) for item in raw.values())
    return isinstance(raw, str) and "${" in raw


def _plain(value: Any) -> Any:
    return value.unwrap() if isinstance(value, _View) else value
