"""expressions: the one evaluator of ``${...}`` and ``-k``, with budgets. Never ``eval``.

simpleeval walks the syntax tree; on top of it every operator and function result is held
to explicit limits, so that a ten-character expression cannot take minutes or gigabytes:
integers to ``MAX_INT_BITS`` bits (a power or shift is refused before it is computed),
text to ``MAX_TEXT`` characters. Calls are to the named functions only (no methods:
``'a'.ljust(10**9)`` is refused), and f-strings, whose format specs pad without limit, are
not expressions here.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import simpleeval

from runner.memos import remember

MAX_INT_BITS = 64  # every integer a spec or a flag needs fits; 2**64 and beyond is refused
MAX_TEXT = 10_000  # characters of one string value
MAX_EXPRESSION = 1_000  # characters of one expression

Names = Mapping[str, Any] | Callable[[ast.Name], Any]


class BudgetExceeded(ValueError):
    """An expression would compute a value beyond the budgets."""


class NotAllowed(ValueError):
    """An expression uses what is not an expression here (a method call, an f-string)."""


def evaluator(
    names: Names, functions: Mapping[str, Callable[..., Any]] | None = None
) -> simpleeval.SimpleEval:
    """A simpleeval evaluator whose operators and functions keep to the budgets.

    ``functions`` come from ``budgeted()``, made once (a matrix makes an evaluator per cell).
    """
    evaluator = simpleeval.SimpleEval(
        operators=dict(_OPERATORS), functions=dict(functions or {}), names=names
    )
    for refused in (ast.JoinedStr, ast.FormattedValue):
        evaluator.nodes.pop(refused, None)
    return evaluator


@remember("pure", "an expression's syntax tree (evaluated, never changed)", maxsize=4096)
def parse(text: str, functions: frozenset[str] = frozenset()) -> ast.Expr:
    """An expression's syntax tree, parsed once however often it is evaluated.

    Raises SyntaxError for what is not an expression, BudgetExceeded for a text too long and
    NotAllowed for a call to anything but one of ``functions``.
    """
    if len(text) > MAX_EXPRESSION:
        raise BudgetExceeded(f"the expression is longer than {MAX_EXPRESSION} characters")
    tree: ast.Expr = simpleeval.SimpleEval().parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in functions):
            called = ast.unparse(node.func)
            known = ", ".join(sorted(functions)) or "none"
            raise NotAllowed(f"{called}(...) cannot be called here (functions: {known})")
        if isinstance(node, ast.JoinedStr):
            raise NotAllowed("f-strings are not expressions here; use str() and +")
    return tree


def checked(value: Any) -> Any:
    """``value`` when it is within the budgets; BudgetExceeded otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise BudgetExceeded(f"an integer of {value.bit_length()} bits (the limit is {MAX_INT_BITS})")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise BudgetExceeded(f"a text of {len(value):,} characters (the limit is {MAX_TEXT:,})")
    return value


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _power(base: Any, exponent: Any) -> Any:
    grows = isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0
    if grows and (exponent > MAX_INT_BITS or (_bits(base) - 1) * exponent > MAX_INT_BITS):
        raise BudgetExceeded(f"{base}**{exponent} has more than {MAX_INT_BITS} bits")
    return operator.pow(base, exponent)


def _multiply(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and _bits(a) + _bits(b) > MAX_INT_BITS + 1:
        raise BudgetExceeded(f"a product of more than {MAX_INT_BITS} bits")
    for text, times in ((a, b), (b, a)):
        if isinstance(text, str) and isinstance(times, int) and len(text) * times > MAX_TEXT:
            raise BudgetExceeded(f"a text of more than {MAX_TEXT:,} characters")
    return operator.mul(a, b)


def _shift(a: Any, b: Any) -> Any:
    if isinstance(b, int) and b > MAX_INT_BITS:
        raise BudgetExceeded(f"a shift by {b} bits (the limit is {MAX_INT_BITS})")
    return operator.lshift(a, b)


def _checked_operator(function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        return checked(function(*args))

    return run


def budgeted(functions: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """``functions`` whose arguments and results are held to the budgets."""
    return {name: _checked_function(function) for name, function in functions.items()}


def _checked_function(function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        for arg in (*args, *kwargs.values()):
            checked(arg)
        return checked(function(*args, **kwargs))

    return run


_OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    **{node: _checked_operator(function) for node, function in simpleeval.DEFAULT_OPERATORS.items()},
    ast.Pow: _checked_operator(_power),
    ast.Mult: _checked_operator(_multiply),
    ast.LShift: _checked_operator(_shift),
    ast.Add: _checked_operator(operator.add),
}
