"""What an upgrade changes: each flag of the spec the target's catalog lacks is renamed (a recorded
rename, or a new flag of identical signature and a similar name), dropped (set to its old default,
so nothing changes), or deleted with a TODO naming what changed; and the notes on what follows the
new ``miles_version`` by itself (the model preset, the launch conventions, the hardware stack)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from runner.knowledge.checkout import contains
from runner.knowledge.flags.catalog import Catalog, Flag
from runner.port.rules import Change
from runner.upgrade.facts import FlagFact, flag_facts
from runner.upgrade.subject import Subject
from runner.upgrade.target import Target

SIMILAR = 0.6  # difflib ratio above which a new flag of the same signature is taken as a rename


@dataclass(frozen=True)
class UpgradePlan:
    source: str  # the spec's version
    target: Target
    changes: tuple[Change, ...]
    todo: dict[str, str]  # dotted key -> what a person must decide


def plan(moved: Subject, old: Catalog, target: Target) -> UpgradePlan:
    changes: list[Change] = []
    todo: dict[str, str] = {}
    for key, value in _written_flags(moved).items():
        name = key[-1]
        now = target.catalog.lookup(name)
        if now is not None:
            note = _reshaped(name, value, old.lookup(name), now, old, target.version)
        else:
            change, note = _move(key, value, old.lookup(name), old, target)
            changes.extend(change)
        if note:
            todo[".".join(key)] = note
    todo.update(_requirements(moved, target))
    return UpgradePlan(str(moved.version), target, tuple(changes), todo)


def _requirements(moved: Subject, target: Target) -> dict[str, str]:
    """A requirement that the miles checkout contain a ref (a branch in flight, a fix) was written for
    the spec's miles: a TODO each, unless the target checkout is there and contains it."""
    requires = moved.composed.data.get("requires")
    todo: dict[str, str] = {}
    for name, entry in requires.items() if isinstance(requires, dict) else ():
        if not isinstance(entry, dict) or entry.get("kind") != "git" or entry.get("repo"):
            continue  # another repository's ref does not follow miles' version
        ref = str(entry.get("contains"))
        if target.checkout is None:
            known = f"whether miles {target.version} contains it is unknown without a checkout (--miles-root)"
        else:
            found = contains(target.checkout, ref, "the miles checkout")
            if found.met:
                continue
            known = found.detail
        todo[f"requires.{name}"] = (
            f"requires.{name} (the miles checkout must contain {ref}) was written for miles {moved.version}; "
            f"{known}. Keep it where that fix is still needed and can be fetched; else delete it "
            f"(requires: {{{name}: !delete}}) and say why: until then an unmet requirement skips the cell"
        )
    return todo


def _reshaped(name: str, value: Any, flag: Flag | None, now: Flag, old: Catalog, version: str) -> str | None:
    """A flag both versions have, whose kind, type or arity changed, or whose choices no longer hold
    the spec's value: it is kept as written (argparse may take it), and a person decides what it means."""
    if flag is None or value is False:
        return None
    shape, was = (now.kind, now.type, now.nargs), (flag.kind, flag.type, flag.nargs)
    values = value if isinstance(value, list) else [value]
    lost = now.choices is not None and any(
        v not in now.choices and not (isinstance(v, str) and "${" in v) for v in values
    )
    if shape == was and not lost:
        return None
    return (
        f"--{name} (set to {value!r}) changed between miles {old.miles} and {version}: "
        f"at {old.miles} {flag.describe()}; at {version} {now.describe()}. "
        "Kept as written: check that the value still means what the test needs"
    )


def _written_flags(moved: Subject) -> dict[tuple[str, ...], Any]:
    """``args.GROUP.FLAG`` -> its value as written (a ``${...}`` stays a reference), every cell's
    (a base's: its own, as the specs that extend it get them)."""
    found: dict[tuple[str, ...], Any] = {}
    for composed in [cell.composed for cell in moved.cells] or [moved.composed]:
        args = composed.data.get("args")
        for group, names in args.items() if isinstance(args, dict) else ():
            if group == "why" or not isinstance(names, dict):
                continue
            for name, value in names.items():
                if name != "why":
                    found.setdefault(("args", group, name), value)
    return found


def _move(
    key: tuple[str, ...], value: Any, flag: Flag | None, old: Catalog, target: Target
) -> tuple[list[Change], str | None]:
    name, version = key[-1], target.version
    fact = flag_facts().get(name)
    gone = f"--{name} is not a flag of miles {version}"
    if fact and fact.renamed:
        return _rename(
            key, value, fact.renamed, f"{gone}: renamed to --{fact.renamed} by {fact.change}"
        ), None
    if fact:
        return [Change(key, None, f"{gone}: removed by {fact.change}", "upgrade")], _removed(fact, value)
    renamed = _same_signature(flag, old, target.catalog) if flag else None
    if renamed:
        reason = (
            f"{gone}; --{renamed.name}, new at {version}, has its program, kind, type, choices and default"
        )
        return _rename(key, value, renamed.name, reason), None
    if flag and _is_default(flag, value):
        reason = (
            f"{gone}; the spec set it to its default at {old.miles} ({value!r}): dropping it changes nothing"
        )
        return [Change(key, None, reason, "upgrade")], None
    known = f" (at {old.miles}: {flag.describe()})" if flag else ""
    note = (
        f"--{name} (set to {value!r}) is not a flag of miles {version}, and no shipped fact "
        "(miles/upgrades.yaml) "
        f"says what became of it{known}: decide what the test needs at {version}"
    )
    return [Change(key, None, f"{gone}; its meaning at {version} is unknown: see todo", "upgrade")], note


def _rename(key: tuple[str, ...], value: Any, new: str, reason: str) -> list[Change]:
    return [Change(key, None, reason, "upgrade"), Change((*key[:-1], new), value, reason, "upgrade")]


def _removed(fact: FlagFact, value: Any) -> str:
    note = f"--{fact.name} (set to {value!r}) was removed by {fact.change}."
    note += f" At the last version that had it: {fact.help}"
    if fact.instead:
        instead = fact.instead
        note += f" Upstream instead: --{instead.flag}: {instead.help} {instead.note}".rstrip()
    return note + ". Decide whether the test needs what replaced it"


def _same_signature(flag: Flag, old: Catalog, new: Catalog) -> Flag | None:
    """The one flag new in ``new`` that reads like ``flag`` (same program, kind, type, choices,
    arity and default) and is named like it; None if none or several."""
    before = {f.name for f in old.flags}
    alike = [
        f
        for f in new.flags
        if f.name not in before
        and (f.program, f.kind, f.type, f.choices, f.nargs, f.default)
        == (flag.program, flag.kind, flag.type, flag.choices, flag.nargs, flag.default)
        and difflib.SequenceMatcher(None, f.name, flag.name).ratio() >= SIMILAR
    ]
    return alike[0] if len(alike) == 1 else None


def _is_default(flag: Flag, value: Any) -> bool:
    if flag.kind == "switch":
        return value is False
    return flag.default is not None and value == flag.default
