"""binds: what of the caller's files the sandbox shows a test script, besides the system and Python.

The checkout (``--miles-root``), when the script lies in it. Otherwise the script's own file and the
modules and packages beside it that it imports by name (``import _glm5``: ``_glm5.py``; a package:
its folder), and those that they import, found by reading their ``import`` statements — never the
rest of its folder: a script in ``/tmp`` or in a home folder must not see its neighbours. A link
beside the script is never followed (it could name any file of the caller's).
"""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

MAX_NAMED = 64  # modules and packages beside a script that are bound, at the most
MAX_SOURCE = 4 << 20  # bytes of a module read for its imports; a larger one names none


def script_reads(script: Path, checkout: Path | None = None) -> list[Path]:
    """The paths to bind read-only for running ``script`` (resolved) with ``checkout``."""
    if checkout is not None and checkout in script.parents:
        return [checkout]
    folder = script.parent
    bound, unread = [script], [script]
    while unread and len(bound) < MAX_NAMED:
        for name in sorted(_imported(unread.pop())):
            for candidate in (folder / f"{name}.py", folder / name):
                kind = _kind(candidate)
                if kind is None or candidate in bound:
                    continue
                bound.append(candidate)
                if kind == "module":
                    unread.append(candidate)
    return [*bound[:MAX_NAMED], *([checkout] if checkout is not None else [])]


def _kind(path: Path) -> str | None:
    """``module`` for a regular file, ``package`` for a folder, None for anything else (a link)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "module"
    return "package" if stat.S_ISDIR(mode) else None


def _imported(module: Path) -> set[str]:
    """The top-level names of the absolute imports of ``module`` (none when it cannot be read or
    parsed: then the script fails in the sandbox and says why)."""
    try:
        with open(module, "rb") as file:
            source = file.read(MAX_SOURCE + 1)
        if len(source) > MAX_SOURCE:
            return set()
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names
