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

from runner import locate
from runner.errors import Location, SpecError, did_you_mean
from runner.knowledge import versions


@dataclass(frozen=True)
class Chosen:
    path: Path
    version: versions.Version
    reason: str


def shipped() -> list[versions.Version]:
    return versions.shipped(p for p in locate.PRESETS.iterdir() if p.is_dir())


def choose(model_type: str, version: str | None, where: Location) -> Chosen:
    """The shipped preset of ``model_type`` for the spec's ``version`` (None: the newest having it)."""
    locate.plain_name(model_type, "model preset", "model.type", where)
    everything = shipped()
    having = [v for v in everything if (v.path / f"{model_type}.yaml").is_file()]
    if version is None:
        if not having:
            raise _unknown(model_type, everything, having, where)
        reason = f"miles {having[-1].commit}, the newest shipped version that has it (no miles_version)"
        return Chosen(having[-1].path / f"{model_type}.yaml", having[-1], reason)
    named = versions.matching(version, everything)
    if len(named) != 1:
        raise SpecError.one(
            "unknown-name",
            f"miles_version {version!r} names {'more than one' if named else 'no'} shipped preset folder"
            f" (shipped: {', '.join(v.commit for v in everything)})",
            key="miles_version",
            at=[where],
            hint="name one of them, or check against a checkout with --miles-root DIR",
        )
    if named[0] not in having:
        raise _unknown(model_type, everything, having, where, f" at miles {named[0].commit}")
    return Chosen(
        named[0].path / f"{model_type}.yaml", named[0], f"miles {named[0].commit}, as miles_version says"
    )


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
