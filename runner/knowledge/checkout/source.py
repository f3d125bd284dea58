"""source: a Python file of the checkout, parsed by ``ast`` (never run).

A stranger's file can break Python's parser in more ways than a syntax error: nesting deeper than
its stack (``RecursionError``: ``x = 1+1+...`` two hundred thousand times), an expression that
exhausts the parser's memory (``MemoryError``: a long run of unary minus), a NUL byte
(``ValueError``). Each is :class:`Unparsable`, a :class:`CheckoutError` that names the file, so a
reader says why it learnt nothing instead of ending in a traceback. The read is the door's: bounded,
a regular file of the tree only.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from runner.knowledge.checkout.tree import MAX_BYTES, CheckoutError, Tree


class Unparsable(CheckoutError):
    """A file of the checkout that Python's parser refuses; ``reason`` says how, without its text."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def parsed(tree: Tree, relative: str | PurePosixPath, limit: int = MAX_BYTES) -> ast.Module:
    """The module ``relative`` of the tree as ``ast`` parses it; CheckoutError saying why not."""
    source = tree.read_bytes(relative, limit)
    try:
        return ast.parse(source, filename=str(tree.root / relative))
    except (SyntaxError, ValueError) as error:
        reason = f"{type(error).__name__}: {error}"
    except (RecursionError, MemoryError) as error:  # the parser's own limits, reached on purpose
        reason = f"{type(error).__name__}: nested too deeply for Python's parser"
    raise Unparsable(f"{relative} in the checkout at {tree.root} cannot be parsed: {reason}", reason)


def docstring(tree: Tree, relative: str | PurePosixPath, limit: int = MAX_BYTES) -> str:
    """The module's docstring; empty when it has none, or cannot be read or parsed."""
    try:
        return ast.get_docstring(parsed(tree, relative, limit)) or ""
    except CheckoutError:
        return ""
