"""upgrade: a spec pinned to one miles version -> the overlay that moves it to another.

``target`` names the miles moved to (shipped, or a checkout read through the door), ``plan``
decides each flag the target lacks (renamed, dropped, or a TODO naming what changed, from the
catalogs and the shipped facts of miles/upgrades.yaml), ``notes`` says what follows the new
``miles_version`` by itself, ``files`` writes the overlay, ``subject`` says what is moved (a spec,
or a base validated through the specs that extend it). :func:`upgrade` chains them and validates
the overlay in memory, as ``port`` does; the caller writes the text it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.errors import Problem, UsageError, display_path
from runner.knowledge import flags
from runner.upgrade.files import overlay_text
from runner.upgrade.notes import follows
from runner.upgrade.plan import UpgradePlan, plan
from runner.upgrade.subject import Subject, checked, subject
from runner.upgrade.target import Target, of_checkout, of_version

__all__ = ["Target", "Upgraded", "default_output", "of_checkout", "of_version", "upgrade"]


@dataclass(frozen=True)
class Upgraded:
    plan: UpgradePlan
    notes: list[str]
    out: Path
    text: str
    problems: list[Problem]  # every problem of the moved cells, each once
    extenders: list[Problem]  # a base's: at the lines of the specs that extend it (theirs to upgrade)
    checked_on: tuple[Path, ...]  # a base's: the specs it was validated through


def default_output(source: Path, target: Target) -> Path:
    return source.with_name(f"{source.stem}-{target.version}.yaml")


def upgrade(source: Path, target: Target, out: Path) -> Upgraded:
    moved = subject(source)
    old = _version_of(moved, source, target)
    catalog = flags.choose(old, None, moved.location("miles_version")).catalog
    steps = plan(moved, catalog, target)
    said = follows(moved, old, target.version)
    text = overlay_text(steps, said, source, out)
    found = checked(moved, out, text, target.checkout)
    return Upgraded(steps, said, out, text, found.problems, found.extenders, moved.extenders)


def _version_of(moved: Subject, source: Path, target: Target) -> str:
    version = moved.version
    if version is None:
        raise UsageError(
            f"{display_path(source)} names no miles_version, so there is nothing to move from: "
            "add the version it was written for (miles_version: COMMIT), then upgrade"
        )
    if flags.choose(version, None, moved.location("miles_version")).catalog.miles == target.version:
        raise UsageError(
            f"{display_path(source)} is already for miles {target.version} ({target.described}): "
            "nothing to upgrade"
        )
    return version
