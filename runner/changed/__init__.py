"""Selection by change: the cells whose inputs a change touched, each with the reasons.

``gather`` turns ``--changed PATH...`` and ``--since REF`` into :class:`Changes` (files of the spec
repository, absolute; files of the miles checkout, relative to its root); ``select`` keeps the cells
one of whose inputs (``inputs.py``) changed. A checkout file no cell names as an input but miles'
core list (``miles/core/``) matches selects every cell; any other file selects none. ``ci plan``,
``list`` and ``run`` all select through here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from runner.cells.cell import Cell
from runner.changed import inputs
from runner.errors import EnvironmentProblem, display_path
from runner.knowledge import versions
from runner.knowledge.checkout import Tree
from runner.memos import remember
from runner.spec import locate

CORE = locate.PROJECT / "miles" / "core"


@dataclass(frozen=True)
class Changes:
    own: frozenset[str]  # absolute paths in the spec repository (or run-matrix's own files)
    checkout: frozenset[str]  # relative to the miles checkout's root


@dataclass(frozen=True)
class Selected:
    cell: Cell
    reasons: tuple[str, ...]  # "matrices/base/x.yaml (extends)", "scripts/models/y.py (model preset)"


def select(cells: Sequence[Cell], changes: Changes, tree: Tree | None = None) -> list[Selected]:
    """The cells an input of which is in ``changes``, in their order, each with why."""
    seen = inputs.Seen()  # what the cells share, read once
    found = [inputs.of(cell, tree, seen) for cell in cells]
    shown: dict[str, str] = {}  # each path as this selection prints it
    named = {path for each in found for path, _ in each.checkout}
    loose = sorted(changes.checkout - named)
    core: dict[str | None, list[str]] = {}  # per miles version: the core files among the loose ones
    chosen: list[Selected] = []
    for cell, each in zip(cells, found, strict=True):
        reasons = [f"{_shown(p, shown)} ({why})" for p, why in each.own if p in changes.own]
        reasons += [f"{p} ({why})" for p, why in each.checkout if p in changes.checkout]
        if each.version not in core:
            core[each.version] = _core(loose, each.version)
        reasons += core[each.version]
        if reasons:
            chosen.append(Selected(cell, tuple(dict.fromkeys(reasons))))
    return chosen


def _shown(path: str, shown: dict[str, str]) -> str:
    if path not in shown:
        shown[path] = display_path(Path(path))
    return shown[path]


def _core(paths: list[str], version: str | None) -> list[str]:
    """Reasons of the core files among ``paths`` (checkout files no cell names)."""
    rules, exempt = core_list(version)
    found = []
    for path in paths:
        if any(fnmatch.fnmatchcase(path, pattern) for pattern, _ in exempt):
            continue
        why = next((why for pattern, why in rules if fnmatch.fnmatchcase(path, pattern)), None)
        if why is not None:
            found.append(f"{path} (core: {why})")
    return found


@remember("shipped", "miles' core list of a version, from miles/core/", maxsize=16)
def core_list(version: str | None) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """miles ``version``'s core patterns and the exempt ones (the file named, else the newest)."""
    found = versions.shipped(CORE.glob("*.yaml")) if CORE.is_dir() else []
    if not found:
        return (), ()
    named = versions.matching(version, found) if version else []
    path = named[0].path if len(named) == 1 else found[-1].path
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return _patterns(data.get("core")), _patterns(data.get("not_core"))
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError) as exc:
        raise EnvironmentProblem(f"{path}: not a core list (core: [{{path, why}}]): {exc}") from None


def _patterns(entries: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(entries, list):
        raise TypeError("expected a list of {path, why}")
    return tuple((str(each["path"]), str(each["why"])) for each in entries)
