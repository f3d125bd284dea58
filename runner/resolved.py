"""resolved: ``Path.resolve()`` once per command.

A command resolves its specs, bases and profiles again and again (which repository a file is
of, which matrices tree, which file a base is), each time a walk of ``lstat`` calls: a fifth of
a cold ``validate``. Here each path is resolved once; :func:`forget` (called as each command
starts) makes the next command resolve afresh, so a link changed between two commands of one
process is followed where it now points. No module here imports another of run-matrix's.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


def resolved(path: Path) -> Path:
    """``path.resolve()``, as it was the first time this command asked."""
    return _resolved(path.absolute())  # a relative path is keyed by the folder it was relative to


@lru_cache(maxsize=8192)
def _resolved(path: Path) -> Path:
    return path.resolve()


def forget() -> None:
    """Start afresh: the next command sees the tree as it is then."""
    _resolved.cache_clear()
