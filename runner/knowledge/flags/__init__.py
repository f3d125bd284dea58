"""flags: every flag a miles version's launch accepts — miles', Megatron's, SGLang's under
``--sglang-`` — with aliases, type, choices and arity, as shipped data per pinned miles version.

Which catalog applies to a spec (:func:`choose`): ``--miles-root``'s checkout (its own flags,
read statically; Megatron's and SGLang's from the shipped catalog closest to it), else the
spec's ``miles_version``, else the newest shipped — and the choice says which and why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from runner.errors import EnvironmentProblem, Location, SpecError
from runner.knowledge import versions
from runner.knowledge.flags.catalog import Catalog, Flag
from runner.knowledge.flags.loaded import Added
from runner.memos import Table, remember
from runner.spec import locate

SHIPPED = locate.PROJECT / "miles" / "flags"
BRANCH_FILE = "sglang-miles.yaml"  # flags of the SGLang branch the container checks out, by hand

__all__ = ["Added", "Catalog", "Choice", "Flag", "choose", "shipped", "with_functions"]


@dataclass(frozen=True)
class Choice:
    """The catalog a cell is checked against, and why that one."""

    catalog: Catalog
    reason: str
    checkout: Path | None = None
    stated: bool = True  # False: no miles_version and no checkout, so the newest shipped catalog
    functions: tuple[Added, ...] = ()  # the custom functions miles loads for the cell, and what each adds


def shipped() -> list[Path]:
    """The shipped catalogs, oldest first (files are named <date>-<commit>.json)."""
    return [v.path for v in versions.shipped(SHIPPED.glob("*.json"))] if SHIPPED.is_dir() else []


def choose(version: str | None, miles_root: Path | None, where: Location, option: str = "") -> Choice:
    """The catalog of ``version``; ``option``: the command line option that named it (``""``: the
    spec's ``miles_version``), which the reasons and errors name."""
    if miles_root is not None:
        return _from_checkout(miles_root.resolve(), version, where, option)
    return _shipped_choice(version, option) or _no_such_version(version, where, option)


NO_CHECKOUT = "no checkout is named to read its module from (--miles-root, $MILES_ROOT)"
_EXTENDED: Table[tuple[int, tuple[str, ...]], tuple[Catalog, Catalog]] = Table(
    "runner.knowledge.flags._EXTENDED",
    "pure",
    "a catalog with the flags of custom functions, by the catalog (kept beside it: its address is not"
    " reused) and where each added flag was read; the cells of one suite share a few functions",
    64,
)


def with_functions(choice: Choice, named: tuple[tuple[str, str], ...], miles_root: Path | None) -> Choice:
    """``choice`` with the flags that the custom functions ``named`` (``loaded.named``) add to
    miles' parser, read from the checkout ``miles_root``; without one, each says it was not read."""
    if not named:
        return choice
    if miles_root is None:
        return replace(choice, functions=tuple(Added(o, f, (), NO_CHECKOUT) for o, f in named))
    from runner.knowledge.checkout import Tree  # the door: only when a checkout is named
    from runner.knowledge.flags.functions import read

    tree = Tree.at(miles_root)
    added = tuple(read(tree, option, function) for option, function in named)
    more = tuple(flag for a in added for flag in a.flags)
    key = (id(choice.catalog), tuple(f"{flag.name} {flag.where}" for flag in more))
    kept = _EXTENDED.get(key)
    if kept is None or kept[0] is not choice.catalog:
        source = ("functions", "the modules of the custom functions a cell names, in the checkout")
        kept = _EXTENDED.put(key, (choice.catalog, choice.catalog.extended(more, source)))
    return replace(choice, catalog=kept[1], functions=added)


@remember("shipped", "the shipped catalog a miles version names")
def _shipped_choice(version: str | None, option: str = "") -> Choice | None:
    """The shipped catalog of ``version`` (a commit prefix), the newest for None; None if none matches."""
    files = shipped()
    if not files:
        raise EnvironmentProblem(f"no flag catalog under {SHIPPED}: run `run-matrix flags sync`")
    if version is None:
        path = files[-1]
        unnamed = f"no {option} given" if option else "the spec names no miles_version"
        reason = f"the newest shipped catalog ({path.name}): {unnamed}"
        return Choice(load(path), reason, stated=False)
    found = versions.matching(version, versions.shipped(files))
    if len(found) != 1:
        return None
    path = found[0].path
    said = option or "the spec's miles_version"
    return Choice(load(path), f"miles {version}, as {said} says ({path.name})")


def _no_such_version(version: str | None, where: Location, option: str = "") -> Choice:
    raise SpecError.one(
        "F0",
        f"{option or 'miles_version'} {version!r} names no single shipped flag catalog",
        key="miles_version",
        at=[where],
        hint=f"use one of {', '.join(v.commit for v in versions.shipped(shipped()))}, or --miles-root DIR"
        " (a checkout)",
    )


@remember("shipped", "a shipped catalog (miles/flags/), modelled")
def load(path: Path) -> Catalog:
    """A shipped catalog, with the flags of the sglang-miles branch its miles version lists."""
    catalog = Catalog.from_json(path.read_text(encoding="utf-8"), origin=path.name)
    branch = ("sglang-miles", "miles/flags/sglang-miles.yaml (the branch's own flags, by hand)")
    return catalog.extended(branch_flags(catalog.miles), branch)


def branch_flags(miles: str) -> tuple[Flag, ...]:
    """The sglang-miles branch's own flags at ``miles`` (a commit), from ``sglang-miles.yaml``."""
    listed = _branch_file()
    return tuple(
        Flag(
            entry["name"],
            "sglang",
            "value",
            entry.get("type", "str"),
            where=f"sglang-miles branch: {entry['source']}",
        )
        for version, entries in listed.items()
        if miles.startswith(version) or version.startswith(miles)
        for entry in entries
    )


@remember("shipped", "miles/flags/sglang-miles.yaml, parsed")
def _branch_file() -> dict[str, list[dict[str, str]]]:
    path = SHIPPED / BRANCH_FILE
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    # shipped data: libyaml's safe loader where PyYAML has it (safe_load's pure-Python one takes 1.5 ms)
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise EnvironmentProblem(f"{path}: expected a map of miles versions to lists of flags")
    return {str(version): entries for version, entries in data.items()}


def _from_checkout(root: Path, version: str | None, where: Location, option: str) -> Choice:
    from runner.knowledge.checkout import Tree  # the door: only when a checkout is named
    from runner.knowledge.flags.sync import FSDP_ARGUMENTS, MILES_FILES

    tree = Tree.at(root)
    if tree.stamp("miles/utils/arguments.py") < 0:
        shipped_choice = _shipped_choice(version, option) or _no_such_version(version, where, option)
        reason = f"{shipped_choice.reason}; the checkout at {root} has no miles/utils/arguments.py to read"
        return Choice(shipped_choice.catalog, reason)
    _shipped_choice(version, option) or _no_such_version(version, where, option)
    return _checkout_choice(root, tuple(tree.stamp(f) for f in (*MILES_FILES, *FSDP_ARGUMENTS)), version)


@remember("stamped", "a checkout's catalog, by the modification times of every file it reads")
def _checkout_choice(root: Path, stamps: tuple[int, ...], version: str | None) -> Choice:
    """``stamps`` (the modification times of the argument modules) make an edited checkout a new key."""
    from runner.knowledge.flags.checkout import catalog_of_checkout

    shipped_base = _shipped_choice(version)
    assert shipped_base is not None  # the caller has checked
    base = shipped_base.catalog
    catalog = catalog_of_checkout(root, base)
    reason = (
        f"the checkout at {root}: its own miles flags; Megatron's and SGLang's from the shipped {base.origin}"
    )
    return Choice(catalog, reason, root)
