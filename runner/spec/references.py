"""references: the syntax of ``${...}`` — where references are in a value, and which keys they read.

``$${`` writes a literal ``${``. Braces and quotes inside a reference are matched, so
``${ {'a': 2}['a'] }`` is one reference (which the evaluator then refuses: no dict literals),
never text left for the launch. Nothing here evaluates anything: ``references`` reads the keys
an unresolved value refers to, so that errors can name the lines a derived value came from.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.memos import remember
from runner.spec import expressions
from runner.spec.load import Key

DOTTED = re.compile(r"^\s*([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*$")
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "int": int,
    "str": str,
    "len": len,
}
FUNCTION_NAMES = frozenset(FUNCTIONS)


@dataclass(frozen=True)
class Reference:
    """One ``${...}`` of a text: what it says, and whether it was written ``$${...}`` (kept)."""

    text: str  # what is between the braces
    literal: bool  # written $${...}: stays ${...}


@remember("pure", "a text split into its pieces", maxsize=4096)
def pieces(raw: str) -> tuple[str | Reference, ...]:
    """``raw`` split into text and references; braces and quotes inside a reference are matched."""
    found: list[str | Reference] = []
    start = 0
    while (opening := raw.find("${", start)) >= 0:
        literal = opening > 0 and raw[opening - 1] == "$"
        closing = _closing_brace(raw, opening + 2)
        found.append(raw[start : opening - literal])
        found.append(Reference(raw[opening + 2 : closing], literal))
        start = closing + 1
    found.append(raw[start:])
    return tuple(piece for piece in found if piece != "")


def _closing_brace(raw: str, start: int) -> int:
    depth, quote, index = 1, "", start
    while index < len(raw):
        char = raw[index]
        if quote:
            index += char == "\\"  # skip what a backslash escapes
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "{}":
            depth += 1 if char == "{" else -1
            if depth == 0:
                return index
        index += 1
    raise ValueError(f"${{ at character {start - 1} is never closed")


def references(raw: Any) -> list[Key]:
    """The keys an unresolved value refers to, read from its ``${...}`` text (nothing evaluated).

    ``${cluster.gpus_per_node - args.misc['actor-num-gpus-per-node']}`` refers to
    ``cluster.gpus_per_node`` and ``args.misc.actor-num-gpus-per-node``. Errors tell a user
    which of their lines a derived value came from.
    """
    if isinstance(raw, list):
        return [key for item in raw for key in references(item)]
    if not isinstance(raw, str) or "${" not in raw:
        return []
    return list(_text_references(raw))


@remember("pure", "the keys a text refers to", maxsize=4096)
def _text_references(raw: str) -> tuple[Key, ...]:
    try:
        found = pieces(raw)
    except ValueError:
        return ()
    keys: list[Key] = []
    for piece in found:
        if isinstance(piece, Reference) and not piece.literal:
            keys += referred(piece.text)
    return tuple(dict.fromkeys(keys))


def referred(text: str) -> list[Key]:
    reference = DOTTED.match(text)
    if reference:
        return [tuple(reference.group(1).split("."))]
    try:
        tree = expressions.parse(text, FUNCTION_NAMES)
    except (SyntaxError, ValueError):
        return []
    chains = [chain for node in ast.walk(tree) if (chain := _chain(node))]
    return [c for c in chains if not any(len(o) > len(c) and o[: len(c)] == c for o in chains)]


def is_set(data: dict[str, Any], key: Key) -> bool:
    node: Any = data
    for name in key:
        if not isinstance(node, dict) or name not in node:
            return False
        node = node[name]
    return True


def _chain(node: ast.AST) -> Key | None:
    """``a.b['c-d']`` as ("a", "b", "c-d"); None for anything else."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        inner = _chain(node.value)
        return (*inner, node.attr) if inner else None
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        inner = _chain(node.value)
        return (*inner, node.slice.value) if inner else None
    return None
