"""test_imports: the checkout files a miles test imports from the checkout itself (``_common.py``
beside it, ``tests.e2e.utils``), read as text through the door and parsed, never run.

An import counts when it names a file of the tree: a relative import from the test's package, a
module beside the test (a test run as a script has its folder on ``sys.path``), or a dotted name
from the checkout's root that is not miles' package (the package is core: every cell reads it).
What they import is followed too, up to :data:`MAX_FILES` files in all.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import PurePosixPath

from runner.knowledge.checkout import CheckoutError, Tree, parsed

MAX_FILES = 64  # local modules of one test, its own included (miles' tests import two or three)
MAX_SOURCE = 1024 * 1024  # a test module of miles is kilobytes
PACKAGE = "miles"  # core: not followed


def local(tree: Tree, test: str) -> tuple[str, ...]:
    """The local modules ``test`` imports, directly or through one another (relative paths, sorted)."""
    return _local(tree, test, tree.stamp(test))


@lru_cache(maxsize=256)
def _local(tree: Tree, test: str, _stamp: int) -> tuple[str, ...]:
    seen = {test}
    waiting = [test]
    while waiting and len(seen) < MAX_FILES:
        for found in _imports(tree, PurePosixPath(waiting.pop())):
            if found not in seen and len(seen) < MAX_FILES:
                seen.add(found)
                waiting.append(found)
    return tuple(sorted(seen - {test}))


def _imports(tree: Tree, module: PurePosixPath) -> tuple[str, ...]:
    return _imports_of(tree, module, tree.stamp(module))


@lru_cache(maxsize=4096)
def _imports_of(tree: Tree, module: PurePosixPath, _stamp: int) -> tuple[str, ...]:
    """The local files one module imports (each module parsed once, whichever test imports it)."""
    try:
        source = parsed(tree, module, MAX_SOURCE)
    except CheckoutError:
        return ()
    found: list[str] = []
    for node in ast.walk(source):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _named(tree, module, alias.name, 0)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found += _named(tree, module, base, node.level)
            found += [
                f for a in node.names for f in _named(tree, module, f"{base}.{a.name}".strip("."), node.level)
            ]
    return tuple(found)


def _named(tree: Tree, module: PurePosixPath, name: str, level: int) -> list[str]:
    """The file of the tree ``name`` imported from ``module`` means, if one does."""
    parts = [p for p in name.split(".") if p]
    if level:
        folders = [module.parents[level - 1]] if level <= len(module.parents) else []
    else:
        if not parts or parts[0] == PACKAGE:
            return []
        folders = [module.parent, PurePosixPath(".")]
    for folder in folders:
        path = folder.joinpath(*parts) if parts else folder
        for candidate in (path.with_name(path.name + ".py"), path / "__init__.py"):
            if path.name and tree.is_file(candidate):
                return [candidate.as_posix()]
    return []
