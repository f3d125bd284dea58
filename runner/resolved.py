"""resolved: ``Path.resolve()`` once per path while a tree is being read.

Checking specs resolves the same specs, bases and profiles again and again (which repository a file
is of, which matrices tree, which file a base is), each time a walk of ``lstat`` calls: a fifth of a
cold ``validate``. Inside :func:`memo` (``pipeline.select``, ``validate.report``: reads of a tree
that nothing writes meanwhile) each path is resolved once; outside it, and after it, every call
resolves afresh, so a command that writes (``import --force`` replacing a link with its spec) and
then reads sees the tree as it is. No module here imports another of run-matrix's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_memo: list[dict[Path, Path]] = []  # the innermost open memo last


def resolved(path: Path) -> Path:
    """``path.resolve()``; inside :func:`memo`, as it was the first time it was asked."""
    if not _memo:
        return path.resolve()
    absolute = path.absolute()  # a relative path is keyed by the folder it was relative to
    known = _memo[-1]
    if absolute not in known:
        known[absolute] = absolute.resolve()
    return known[absolute]


@contextmanager
def memo() -> Iterator[None]:
    """Resolve each path once until the block ends (a nested block shares the outer one's memo)."""
    _memo.append(_memo[-1] if _memo else {})
    try:
        yield
    finally:
        _memo.pop()
