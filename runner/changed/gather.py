"""``--changed PATH...`` and ``--since REF`` as :class:`Changes`.

A path is taken relative to the current directory (or as given, when absolute) and must lie in the
spec repository (the git work tree the current directory is in, else the current directory) or in
the miles checkout (``--miles-root``); a relative path that exists in neither (a file the change
deleted, a checkout path such as ``scripts/models/x.py``) counts for both. ``--since REF`` asks
the spec repository, and the checkout with ``--miles-root``, for what HEAD changed since it forked
from REF; at least one must know REF.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from runner.cells.cell import Cell
from runner.changed import Changes, Selected, select
from runner.errors import RunMatrixError, UsageError
from runner.knowledge.checkout import NotGit, Tree, since

MAX_PATH = 4096  # characters of one --changed path


def spec_repository(start: Path) -> Path:
    """The git work tree ``start`` is in (the nearest folder with a ``.git``), else ``start``."""
    here = start.resolve()
    return next((folder for folder in (here, *here.parents) if (folder / ".git").exists()), here)


def gather(changed: Sequence[str], ref: str | None, miles_root: Path | None, cwd: Path) -> Changes:
    repository = spec_repository(cwd)
    checkout = miles_root.resolve() if miles_root is not None else None
    own: set[str] = set()
    theirs: set[str] = set()
    for text in changed:
        mine, its = _one(text, cwd.resolve(), repository, checkout)
        own.update(mine)
        theirs.update(its)
    if ref is not None:
        mine_since, its_since = _since(ref, repository, checkout)
        own.update(mine_since)
        theirs.update(its_since)
    return Changes(frozenset(own), frozenset(theirs))


def _one(text: str, cwd: Path, repository: Path, checkout: Path | None) -> tuple[list[str], list[str]]:
    if not text or len(text) > MAX_PATH or any(ord(c) < 32 for c in text):
        raise UsageError(f"--changed {since.shown(text)}: not a path (empty, control characters or too long)")
    path = Path(text) if Path(text).is_absolute() else cwd / text
    resolved = path.resolve()
    own = [str(resolved)] if resolved.is_relative_to(repository) else []
    if checkout is not None and resolved.is_relative_to(checkout):
        return own, [resolved.relative_to(checkout).as_posix()]
    if checkout is not None and not Path(text).is_absolute() and not path.exists():
        inside = (checkout / text).resolve()
        if inside.is_relative_to(checkout):
            return own, [inside.relative_to(checkout).as_posix()]
    if not own:
        where = f"the spec repository {repository}" + (f" nor the checkout {checkout}" if checkout else "")
        raise UsageError(f"--changed {since.shown(text)}: not a file of {where}; name a file of it")
    return own, []


def _since(ref: str, repository: Path, checkout: Path | None) -> tuple[list[str], list[str]]:
    """What HEAD changed since ``ref`` in the spec repository, and in the checkout."""
    failures: list[RunMatrixError] = []
    own: list[str] = []
    theirs: list[str] = []
    try:
        own = [str(repository / name) for name in since.changed(since.own(repository), ref)]
    except RunMatrixError as exc:
        failures.append(exc)
    if checkout is not None and checkout != repository:
        try:
            theirs = list(since.changed(since.checkout(checkout), ref))
        except RunMatrixError as exc:
            failures.append(exc)
    asked = 2 if checkout is not None and checkout != repository else 1
    if len(failures) == asked:
        told: list[RunMatrixError] = [f for f in failures if isinstance(f, UsageError)]
        raise (told or [f for f in failures if not isinstance(f, NotGit)] or failures)[0]
    return own, theirs


def narrow(
    cells: Sequence[Cell], changed: Sequence[str] | None, ref: str | None, miles_root: Path | None
) -> list[Selected] | None:
    """The cells a change selects (``--changed``, ``--since``), with why; None when neither is given."""
    if changed is None and ref is None:
        return None
    if miles_root is not None and not miles_root.is_dir():
        raise UsageError(f"--miles-root {miles_root}: no such directory")
    changes = gather(changed or (), ref, miles_root, Path.cwd())
    return select(cells, changes, Tree.at(miles_root) if miles_root is not None else None)
