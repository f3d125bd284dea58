"""A check a test of the checkout defines itself (``verify:`` ``PATH.py:function``), read as text.

The file is parsed (``ast``), never imported: a checkout's code runs only in the sandbox. What is
read: whether the file holds a top-level function of that name, its parameters (required: no
default), and the paths under Ray's default temp dir its body names (``/tmp/ray/session_latest``):
a run-matrix cell keeps its Ray session elsewhere.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from pathlib import Path

from runner.knowledge.checkout import CheckoutError, OutsideCheckout, TooLarge, Tree, Unparsable, parsed
from runner.memos import remember
from schemas import calls

MAX_BYTES = 4 * 1024 * 1024  # a test file is kilobytes; a bigger one is not parsed
RAY_DEFAULT_TEMP = "/tmp/ray/"  # Ray's temp dir when `ray start` is given none


@dataclass(frozen=True)
class OwnCheck:
    """A test's own check as its file defines it."""

    file: Path
    line: int
    required: tuple[str, ...]
    optional: tuple[str, ...]
    any_keyword: bool  # it takes **kwargs
    ray_paths: tuple[str, ...]  # text under /tmp/ray/ its body names
    functions: tuple[str, ...] = ()  # the top-level functions of its file, and the names it imports
    names: frozenset[str] = frozenset()  # the names its body uses (the functions it calls among them)


def read(root: Path, call: str) -> OwnCheck | str:
    """The check ``call`` names in the checkout at ``root``, or why there is none to read."""
    relative = calls.file_of(call)
    name = calls.function_of(call)
    try:
        tree = Tree.at(root)
        resolved = tree.locate(relative)
    except OutsideCheckout:
        return f"{relative} leads out of the checkout at {root}"
    except CheckoutError:
        return f"the checkout at {root} has no file {relative}"
    if not resolved.exists():
        return f"the checkout at {root} has no file {relative}"
    if not resolved.is_file():
        return f"{relative} in the checkout at {root} is not a file"
    found = _parsed(tree, relative, tree.stamp(relative))
    if isinstance(found, str):
        return f"{relative} in the checkout at {root} {found}"
    defined = [key for key, node in found.items() if isinstance(node, ast.FunctionDef)]
    function = found.get(name)
    if isinstance(function, int):
        return (
            f"{relative} binds {name} to something else at line {function}, after its def: the call would"
            " get what the module holds last"
        )
    if function is None:
        known = ", ".join(sorted(defined)) or "none"
        close = difflib.get_close_matches(name, defined, n=1)
        meant = f"did you mean {close[0]}? " if close else ""
        return f"{relative} defines no top-level function {name} ({meant}it defines: {known})"
    return _check(resolved, function, tuple(found))


@remember("stamped", "a checkout module's top-level functions, by its modification time")
def _parsed(door: Tree, relative: str, stamp: int) -> dict[str, ast.FunctionDef | int | None] | str:
    """The top-level functions of ``path`` by name, the last ``def`` of each; the line of a later
    statement of the module's own that binds the name to something else (an assignment, an import, a
    class), as the module the call loads then holds that; None for a name it imports before any def
    of it (``from X import name``: a name of the module a ``launched_by`` may leave out); why not, if
    it cannot be read. ``stamp`` (the file's mtime) makes an edited file a new cache entry."""
    try:
        tree = parsed(door, relative, MAX_BYTES)
    except TooLarge:
        return f"is over {MAX_BYTES // (1024 * 1024)} MiB: not read"
    except Unparsable as error:
        return f"cannot be parsed: {error.reason}"
    except CheckoutError as error:
        return f"cannot be read: {error}"
    found: dict[str, ast.FunctionDef | int | None] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
            continue
        for name in _bound(node):
            if found.get(name) is not None:
                found[name] = node.lineno
            elif isinstance(node, ast.ImportFrom):
                found[name] = None
    return found


def _bound(node: ast.stmt) -> list[str]:
    """The names a top-level statement other than a ``def`` binds (its own targets only)."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, (ast.ClassDef, ast.AsyncFunctionDef)):
        return [node.name]
    return []


def parameters(function: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """The names a function takes by keyword, as its source says: (required, optional)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    required = [a.arg for a in positional[:first_default]]
    optional = [a.arg for a in positional[first_default:]]
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        (optional if default is not None else required).append(argument.arg)
    return required, optional


def _check(path: Path, function: ast.FunctionDef, functions: tuple[str, ...]) -> OwnCheck:
    required, optional = parameters(function)
    named = (
        node.value
        for node in ast.walk(function)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )
    ray = tuple(dict.fromkeys(text for text in named if text.startswith(RAY_DEFAULT_TEMP)))
    any_keyword = function.args.kwarg is not None
    names = frozenset(node.id for node in ast.walk(function) if isinstance(node, ast.Name))
    return OwnCheck(
        path, function.lineno, tuple(required), tuple(optional), any_keyword, ray, functions, names
    )
