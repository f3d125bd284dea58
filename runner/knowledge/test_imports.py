"""test_imports: the checkout files a miles test imports from the checkout itself (``_common.py``
beside it, ``tests.e2e.utils``), read as text through the door and parsed, never run.

An import counts when it names a file of the tree: a relative import from the test's package, a
module beside the test (a test run as a script has its folder on ``sys.path``), or a dotted name
from the checkout's root that is not miles' package (the package is core: every cell reads it).
What they import is followed too, up to :data:`MAX_FILES` files in all.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from runner.knowledge.checkout import CheckoutError, Tree, parsed
from runner.memos import remember

MAX_FILES = 64  # local modules of one test, its own included (miles' tests import two or three)
MAX_SOURCE = 1024 * 1024  # a test module of miles is kilobytes
PACKAGE = "miles"  # core: not followed


def local(tree: Tree, test: str) -> tuple[str, ...]:
    """The local modules ``test`` imports, directly or through one another (relative paths, sorted)."""
    seen = {test}
    waiting = [test]
    while waiting and len(seen) < MAX_FILES:
        for found in _imports(tree, PurePosixPath(waiting.pop())):
            if found not in seen and len(seen) < MAX_FILES:
                seen.add(found)
                waiting.append(found)
    return tuple(sorted(seen - {test}))


def _imports(tree: Tree, module: PurePosixPath) -> list[str]:
    """The local files one module imports (which files the tree has is asked each time)."""
    names = _imported_names(tree, module, tree.stamp(module))
    return [found for name, level in names for found in _named(tree, module, name, level)]


@remember("stamped", "the names a checkout's module imports, by its modification time", maxsize=4096)
def _imported_names(tree: Tree, module: PurePosixPath, _stamp: int) -> tuple[tuple[str, int], ...]:
    """What one module imports, as (dotted name, level) pairs (each module parsed once, whichever test
    imports it)."""
    try:
        source = parsed(tree, module, MAX_SOURCE)
    except CheckoutError:
        return ()
    found: list[tuple[str, int]] = []
    for node in ast.walk(source):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.append((base, node.level))
            found += [(f"{base}.{a.name}".strip("."), node.level) for a in node.names]
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
