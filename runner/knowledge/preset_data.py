"""preset_data: the model presets run-matrix ships, one folder per pinned miles version.

``miles/models/<date>-<commit8>/<type>.yaml`` holds what ``scripts/models/<type>.(py|sh)`` of that
miles commit expands to, as a ``model_args`` mapping in miles' order, with the commit and file
it came from (``preset_sync.py`` writes them from a checkout).

Which folder a spec gets (:func:`choose`): the one its ``miles_version`` names, else the newest
that has the type — and the choice says which and why, so it is never silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.errors import Location, SpecError, did_you_mean
from runner.knowledge import versions
from runner.spec import locate


@dataclass(frozen=True)
class Chosen:
    """The preset file chosen for a model type: its path, the shipped version it is of, and why that one."""

    path: Path
    version: versions.Version
    reason: str


def shipped() -> list[versions.Version]:
    return versions.shipped(p for p in locate.PRESETS.iterdir() if p.is_dir())


def choose(model_type: str, version: str | None, where: Location) -> Chosen:
    """The shipped preset of ``model_type`` for the spec's ``version`` (None: the newest having it).

    A version that names no shipped version is rule F0's to report (the flag catalogs are shipped
    for the same versions); until it is fixed the newest preset stands in.
    """
    locate.plain_name(model_type, "model preset", "model.type", where)
    everything = shipped()
    having = [v for v in everything if (v.path / f"{model_type}.yaml").is_file()]
    named = versions.matching(version, everything) if version is not None else []
    if len(named) == 1:
        if named[0] not in having:
            raise _unknown(model_type, everything, having, where, f" at miles {named[0].commit}")
        reason = f"miles {named[0].commit}, as miles_version says"
        return Chosen(named[0].path / f"{model_type}.yaml", named[0], reason)
    if not having:
        raise _unknown(model_type, everything, having, where)
    why = "no miles_version" if version is None else f"miles_version {version!r} names no single one"
    reason = f"miles {having[-1].commit}, the newest shipped version that has it ({why})"
    return Chosen(having[-1].path / f"{model_type}.yaml", having[-1], reason)


def _unknown(
    model_type: str,
    everything: list[versions.Version],
    having: list[versions.Version],
    where: Location,
    at: str = "",
) -> SpecError:
    known = sorted({p.stem for v in everything for p in v.path.glob("*.yaml")})
    elsewhere = f"; miles {', '.join(v.commit for v in having)} has it" if having else ""
    return SpecError.one(
        "unknown-name",
        f"no model preset named {model_type!r}{at}{elsewhere}",
        key="model.type",
        at=[where],
        hint=f"miles_version: {having[-1].commit}"
        if having
        else did_you_mean(model_type, known) or "run-matrix presets list shows the shipped ones",
    )
