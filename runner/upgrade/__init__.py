"""upgrade: a spec pinned to one miles version -> the overlay that moves it to another.

``target`` names the miles moved to (shipped, or a checkout read through the door), ``plan``
decides each flag the target lacks (renamed, dropped, or a TODO naming what changed, from the
catalogs and the shipped facts of miles/upgrades.yaml), ``notes`` says what follows the new
``miles_version`` by itself, ``files`` writes the overlay. :func:`upgrade` chains them and
validates the overlay in memory, as ``port`` does; the caller writes the text it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner import check, pipeline
from runner.cell import Cell
from runner.errors import Location, Problem, SpecError, UsageError, display_path
from runner.knowledge import flags
from runner.upgrade.files import overlay_text
from runner.upgrade.notes import follows
from runner.upgrade.plan import UpgradePlan, plan
from runner.upgrade.target import Target, of_checkout, of_version

__all__ = ["Target", "Upgraded", "of_checkout", "of_version", "upgrade"]


@dataclass(frozen=True)
class Upgraded:
    plan: UpgradePlan
    notes: list[str]
    out: Path
    text: str
    problems: list[Problem]  # every problem of the moved cells, each once


def upgrade(cells: list[Cell], source: Path, target: Target, out: Path) -> Upgraded:
    old = _version_of(cells[0], source, target)
    catalog = flags.choose(old, None, cells[0].location("miles_version")).catalog
    steps = plan(cells, catalog, target)
    said = follows(cells[0], old, target.version)
    text = overlay_text(steps, said, source, out)
    return Upgraded(steps, said, out, text, _problems(out, text, target.checkout))


def _version_of(cell: Cell, source: Path, target: Target) -> str:
    version = cell.spec.miles_version
    if version is None:
        raise UsageError(
            f"{display_path(source)} names no miles_version, so there is nothing to move from: "
            "add the version it was written for (miles_version: COMMIT), then upgrade"
        )
    if flags.choose(version, None, Location(source)).catalog.miles == target.version:
        raise UsageError(
            f"{display_path(source)} is already for miles {target.version} ({target.described}): "
            "nothing to upgrade"
        )
    return version


def _problems(out: Path, text: str, checkout: Path | None) -> list[Problem]:
    """Every moved cell's problems, each once, checked against the checkout when one is given."""
    try:
        cells = pipeline.cells(out, miles_root=checkout, documents={out.resolve(): text})
        found = [p for cell in cells for p in check.run(cell)]
    except SpecError as exc:
        found = list(exc.problems)
    return list(dict.fromkeys(found))
