"""enclosing: the miles checkout a path stands in — the first folder at or above it that is a miles tree.

A folder is a miles tree when it holds the ``miles`` package (``miles/__init__.py``, a file) and says
it is miles' own: a ``.git`` (a clone, or a worktree's ``.git`` file), or a ``setup.py`` or
``pyproject.toml`` that names the ``miles`` project. A package named ``miles`` alone is not enough —
run-matrix's own ``miles/`` folder (data, no ``__init__.py``) and a vendored copy in some other
project are not checkouts. Each candidate is read through :class:`Tree`: bounded, no final link.
"""

from __future__ import annotations

import re
from pathlib import Path

from runner.knowledge.checkout.tree import CheckoutError, Tree

PACKAGING = ("setup.py", "pyproject.toml")
NAMES_MILES = re.compile(r"""\bname\s*=\s*["']miles["']""")  # setup(name="miles"), name = 'miles'
MAX_PACKAGING_BYTES = 256 * 1024


def enclosing(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` that is a miles tree (resolved), else None."""
    start = path.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        if is_miles_tree(folder):
            return folder
    return None


def is_miles_tree(folder: Path) -> bool:
    try:
        tree = Tree.at(folder)
        return tree.is_file("miles/__init__.py") and (
            tree.exists(".git") or any(_names_miles(tree, name) for name in PACKAGING)
        )
    except CheckoutError:  # a folder that cannot be read as a tree is not one
        return False


def _names_miles(tree: Tree, packaging: str) -> bool:
    if not tree.is_file(packaging):
        return False
    try:
        return NAMES_MILES.search(tree.read_text(packaging, MAX_PACKAGING_BYTES)) is not None
    except CheckoutError:
        return False
