"""The pipeline in one place: load -> compose -> resolve -> model -> check.

``cell(path)`` is the whole design in a dozen lines; ``render`` and ``run``
take its result. Nothing here runs anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from runner import check, locate
from runner.compose import Composed, compose
from runner.errors import Location, Problem, SpecError
from runner.model import build
from runner.resolve import Resolver, resolve
from schemas import HardwareProfile, LaunchConventions, ModelPreset, Spec


@dataclass(frozen=True)
class Cell:
    """One runnable unit: a resolved, modelled spec and everything it refers to."""

    id: str
    spec: Spec
    profile: HardwareProfile
    preset: ModelPreset
    conventions: LaunchConventions
    composed: Composed = field(repr=False)  # the provenance of every key

    @property
    def path(self) -> Path:
        return self.composed.path

    def location(self, *key: str) -> Location:
        return self.composed.location(key)


def cell(path: Path) -> Cell:
    """Build one cell from a spec file; raise every spec problem at once."""
    composed = compose(path)
    profile = _profile(composed)
    resolved = resolve(
        composed, {"profile": lambda _: profile.model_dump(), "visible_devices": _visible_devices}
    )
    spec = build(Spec, resolved.data, composed)
    preset = load_preset(spec.model.type, composed.location(("model", "type")))
    return Cell(locate.cell_name(path), spec, profile, preset, conventions(), composed)


def checked(path: Path) -> tuple[Cell, list[Problem]]:
    """A cell and the problems its rules find (errors raise; warnings are returned)."""
    built = cell(path)
    problems = list(check.run(built))
    if any(p.severity == "error" for p in problems):
        raise SpecError(problems)
    return built, problems


def spec_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every spec named by ``paths``: files as given, folders searched for cells.

    In a folder, ``hardware/`` holds profiles and ``base/`` holds specs meant to be
    extended; neither is a cell of its own.
    """
    for path in paths:
        if path.is_dir():
            for found in sorted(path.rglob("*.yaml")):
                if not {"hardware", "base"} & set(found.relative_to(path).parts[:-1]):
                    yield found
        else:
            yield path


def _profile(composed: Composed) -> HardwareProfile:
    name = composed.data.get("hardware")
    where = composed.location(("hardware",))
    if not isinstance(name, str):
        raise SpecError.one(
            "missing-key" if name is None else "type",
            "'hardware' is required: the name of a profile in matrices/hardware/"
            if name is None
            else f"hardware: expected a profile name, got {name!r}",
            key="hardware",
            at=[where],
        )
    return load_profile(locate.hardware_profile(name, composed.path, where))


def _visible_devices(resolver: Resolver) -> str:
    gpus = resolver.lookup(("cluster", "gpus_per_node"), ("visible_devices",))
    return ",".join(str(i) for i in range(int(gpus)))


def _modelled(cls: Any, path: Path) -> Any:
    composed = compose(path)
    return build(cls, resolve(composed, {}).data, composed)


@cache
def load_profile(path: Path) -> HardwareProfile:
    profile: HardwareProfile = _modelled(HardwareProfile, path)
    if profile.name != path.stem:
        raise SpecError.one(
            "unknown-name",
            f"profile file {path.name} names itself {profile.name!r}",
            key="name",
            at=[Location(path)],
            hint=f"rename the file or set name: {path.stem}",
        )
    return profile


@cache
def load_preset(name: str, where: Location) -> ModelPreset:
    preset: ModelPreset = _modelled(ModelPreset, locate.model_preset(name, where))
    return preset


@lru_cache(maxsize=1)
def conventions() -> LaunchConventions:
    conventions: LaunchConventions = _modelled(LaunchConventions, locate.CONVENTIONS)
    return conventions
