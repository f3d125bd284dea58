"""The miles an upgrade moves to: a shipped version (``--to-version``), or a checkout read through
the door (``--miles-root``), named as ``knowledge.flags.identify`` names it: by its HEAD, else by
the shipped version whose miles flags it has exactly."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.errors import Location, UsageError
from runner.knowledge import flags, versions
from runner.knowledge.checkout import CheckoutError, Tree
from runner.knowledge.flags.catalog import Catalog
from runner.knowledge.flags.identify import shipped_version

ARGUMENTS = "miles/utils/arguments.py"  # where miles declares its flags: no such file, no miles


@dataclass(frozen=True)
class Target:
    version: str  # the commit prefix of a shipped version: its presets and conventions apply
    catalog: Catalog  # the flags the moved spec is checked against
    checkout: Path | None = None

    @property
    def described(self) -> str:
        where = f"the checkout at {self.checkout}, " if self.checkout else ""
        return f"{where}miles {self.version}"


def shipped_versions() -> list[versions.Version]:
    return versions.shipped(flags.shipped())


def of_version(version: str, option: str = "--to-version") -> Target:
    found = versions.matching(version, shipped_versions())
    if len(found) != 1:
        known = ", ".join(v.commit for v in shipped_versions())
        raise UsageError(f"{option} {version!r} names no single shipped miles version (shipped: {known})")
    return Target(found[0].commit, flags.load(found[0].path))


def of_checkout(root: Path) -> Target:
    """The checkout's own flags, and the shipped version it is."""
    try:
        tree = Tree.at(root)
    except CheckoutError as exc:
        raise UsageError(str(exc)) from None
    if not tree.is_file(ARGUMENTS):
        raise UsageError(f"{root} is not a miles checkout: it has no {ARGUMENTS}")
    newest = shipped_versions()[-1]
    catalog = flags.choose(newest.commit, tree.root, Location(Path("--miles-root"))).catalog
    version = shipped_version(tree.root, catalog)
    if version is None:
        raise UsageError(
            f"the checkout at {root} is no miles version run-matrix ships knowledge of (its HEAD is not "
            "one, and its flags match none): upgrade needs that version's presets and conventions; "
            "add them (docs/hardware.md: Where run-matrix's knowledge of miles comes from),"
            " or use --to-version"
        )
    return Target(version, catalog, tree.root)
