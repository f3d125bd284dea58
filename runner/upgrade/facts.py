"""Shipped facts of upstream flag changes (miles/upgrades.yaml): what a catalog cannot tell, namely
whether a flag that is gone was renamed or removed with a change of behaviour, and by which change."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.errors import EnvironmentProblem
from runner.memos import remember
from runner.spec import locate

FACTS = locate.PROJECT / "miles" / "upgrades.yaml"
FIELDS = {"gone_in", "renamed", "removed", "change", "help", "instead"}


@dataclass(frozen=True)
class Instead:
    flag: str
    help: str
    note: str


@dataclass(frozen=True)
class FlagFact:
    name: str
    gone_in: str
    change: str
    help: str
    renamed: str | None = None  # the new spelling: same meaning
    instead: Instead | None = None  # what upstream does in place of a removed flag


@remember("shipped", "miles/upgrades.yaml, parsed")
def flag_facts(path: Path = FACTS) -> dict[str, FlagFact]:
    """Every recorded flag change by old spelling; a malformed file is the project's bug, said so."""
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entries = data.get("flags", {}) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise EnvironmentProblem(f"{path}: expected `flags:`, a map of flag names to their changes")
    return {str(name): _fact(path, str(name), entry) for name, entry in entries.items()}


def _fact(path: Path, name: str, entry: Any) -> FlagFact:
    if not isinstance(entry, dict) or not set(entry) <= FIELDS or not {"gone_in", "change"} <= set(entry):
        raise EnvironmentProblem(
            f"{path}: flags.{name}: expected gone_in, change and renamed or removed "
            f"(known keys: {', '.join(sorted(FIELDS))})"
        )
    if bool(entry.get("renamed")) == bool(entry.get("removed")):
        raise EnvironmentProblem(f"{path}: flags.{name}: say either renamed: NEW or removed: true")
    instead = entry.get("instead")
    if instead is not None and not (isinstance(instead, dict) and "flag" in instead):
        raise EnvironmentProblem(f"{path}: flags.{name}.instead: expected flag, help and note")
    return FlagFact(
        name,
        str(entry["gone_in"]),
        " ".join(str(entry["change"]).split()),
        " ".join(str(entry.get("help", "")).split()),
        str(entry["renamed"]) if entry.get("renamed") else None,
        Instead(str(instead["flag"]), str(instead.get("help", "")), str(instead.get("note", "")))
        if instead
        else None,
    )
