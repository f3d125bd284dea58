"""requires: what a cell needs beyond its flags, checked on this machine before anything runs.

An unmet requirement skips the cell with its reason (``--strict`` makes that a failure);
an unmet optional one is only reported. The reason of a requirement is the spec's
``why:`` for ``requires.<name>``.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from pathlib import Path

from runner.cells.cell import Cell
from runner.knowledge import checkout
from runner.results.outcome import RequirementResult
from schemas.run import EnvRequirement, FileRequirement, GitRequirement, PackageRequirement, Requirement


def check(cell: Cell, miles_root: Path | None, env: Mapping[str, str]) -> tuple[RequirementResult, ...]:
    return tuple(
        _result(name, requirement, _why(cell, name), miles_root, env)
        for name, requirement in cell.spec.requires.items()
    )


def unmet(results: tuple[RequirementResult, ...]) -> list[RequirementResult]:
    return [r for r in results if not r.met and not r.optional]


def _why(cell: Cell, name: str) -> str:
    steps = cell.composed.provenance.get(("requires", name), ())
    return steps[-1].why if steps else ""


def _result(
    name: str, requirement: Requirement, why: str, miles_root: Path | None, env: Mapping[str, str]
) -> RequirementResult:
    match requirement:
        case PackageRequirement():
            met, detail = _package(requirement)
        case GitRequirement():
            met, detail = _git(requirement, miles_root)
        case FileRequirement():
            met, detail = _file(requirement)
        case EnvRequirement():
            met, detail = _env(requirement, env)
    return RequirementResult(name, requirement.kind, met, requirement.optional, detail, why)


def _package(requirement: PackageRequirement) -> tuple[bool, str]:
    try:
        installed = importlib.metadata.version(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        return False, f"{requirement.name} is not installed"
    if requirement.min_version is None:
        return True, f"{requirement.name} {installed} is installed"
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # the run extra brings it; list may run without
        return (
            False,
            f"{requirement.name} {installed} is installed; comparing versions needs packaging "
            "(the run extra)",
        )
    try:
        new_enough = Version(installed) >= Version(requirement.min_version)
    except InvalidVersion as exc:
        return False, f"cannot compare {requirement.name} versions: {exc}"
    relation = ">=" if new_enough else "<"
    return new_enough, f"{requirement.name} {installed} {relation} {requirement.min_version}"


def _git(requirement: GitRequirement, miles_root: Path | None) -> tuple[bool, str]:
    """Asked of the door: it reads refs as files and runs no program the checkout configures."""
    repo = Path(requirement.repo) if requirement.repo else miles_root
    what = "the miles checkout" if requirement.repo is None else "the checkout"
    if repo is None:
        return (
            False,
            f"{requirement.contains} cannot be checked: no miles checkout (--miles-root or MILES_ROOT)",
        )
    found = checkout.contains(repo, requirement.contains, what)
    return found.met, found.detail


def _file(requirement: FileRequirement) -> tuple[bool, str]:
    path = Path(requirement.path)
    if not path.is_file():
        return False, f"{path} does not exist"
    if requirement.contains is None:
        return True, f"{path} exists"
    found = requirement.contains in path.read_text(encoding="utf-8", errors="replace")
    return found, f"{path} {'contains' if found else 'does not contain'} {requirement.contains!r}"


def _env(requirement: EnvRequirement, env: Mapping[str, str]) -> tuple[bool, str]:
    value = env.get(requirement.name)
    if value is None:
        return False, f"${requirement.name} is not set"
    if requirement.value is None:
        return True, f"${requirement.name} is set"
    met = value == requirement.value
    # the value is never shown: it may be a secret
    return met, f"${requirement.name} {'is' if met else 'is not'} {requirement.value!r}"
