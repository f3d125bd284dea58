"""The pipeline in one place: load -> compose -> resolve -> model -> check.

``cell(path)`` is the whole design in a dozen lines; ``render`` and ``run``
take its result. Nothing here runs anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from runner import check, locate
from runner.cell import Cell
from runner.compose import Composed, compose
from runner.errors import Location, Problem, SpecError
from runner.model import build
from runner.resolve import Resolver, resolve
from schemas import HardwareProfile, LaunchConventions, ModelPreset, Spec


def cell(path: Path) -> Cell:
    """Build one cell from a spec file; raise every spec problem at once."""
    composed = compose(path)
    profile = _profile(composed)
    resolved = resolve(
        composed, {"profile": lambda _: profile.model_dump(), "visible_devices": _visible_devices}
    )
    spec = build(Spec, resolved.data, composed)
    preset, preset_source = load_preset(spec.model.type, composed.location(("model", "type")))
    hf_config = _hf_config(spec.args.ckpt.get("hf-checkpoint"))
    return Cell(
        locate.cell_name(path), spec, profile, preset, conventions(), composed, preset_source, hf_config
    )


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


def _hf_config(checkpoint: Any) -> dict[str, Any] | None:
    """The checkpoint's config.json when it exists on this machine (for rule L12)."""
    path = Path(str(checkpoint)) / "config.json" if checkpoint else None
    if path is None or not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError.one("L12", f"cannot read {path}: {exc}", key="args.ckpt.hf-checkpoint") from None
    return config if isinstance(config, dict) else None


def _modelled(cls: Any, path: Path) -> Any:
    return _modelled_with_source(cls, path)[0]


@cache
def _modelled_with_source(cls: Any, path: Path) -> tuple[Any, Composed]:
    composed = compose(path)
    return build(cls, resolve(composed, {}).data, composed), composed


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


def load_preset(name: str, where: Location) -> tuple[ModelPreset, Composed]:
    preset, source = _modelled_with_source(ModelPreset, locate.model_preset(name, where))
    return preset, source


def conventions() -> LaunchConventions:
    conventions: LaunchConventions = _modelled(LaunchConventions, locate.CONVENTIONS)
    return conventions
