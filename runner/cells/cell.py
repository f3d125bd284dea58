"""A cell: one runnable unit — a resolved, modelled spec and everything it refers to."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import Location, Problem
from runner.spec.compose import Composed
from schemas import HardwareProfile, LaunchConventions, ModelPreset, Spec
from schemas.launchers import Launcher, Launchers
from schemas.matrix import Skip

if TYPE_CHECKING:
    from runner.cells.hardware import Share
    from runner.knowledge.flags import Choice


@dataclass(frozen=True)
class Cell:
    """One runnable unit: a resolved, modelled spec and everything it refers to."""

    id: str
    spec: Spec
    profile: HardwareProfile
    preset: ModelPreset
    conventions: LaunchConventions
    composed: Composed = field(repr=False)  # the provenance of every key
    preset_source: Composed = field(repr=False)
    launchers: Launchers = field(repr=False)  # miles/launchers.yaml, which launch.script was checked by
    hf_config: dict[str, Any] | None = field(default=None, repr=False)  # the checkpoint's config.json
    axes: dict[str, Any] = field(default_factory=dict)  # this cell's matrix axis values
    skip: Skip | None = None
    xfail: str | None = None  # the reason a failure is expected
    timeout: int | None = None  # seconds, from the matrix's adjust
    flags: Choice | None = field(default=None, repr=False)  # the flag catalog it is checked against
    # the presets of the model types prepare steps convert for, where not the cell's own
    step_presets: dict[str, ModelPreset] = field(default_factory=dict, repr=False)
    share: Share | None = field(default=None, repr=False)  # the GPUs of a node the runner gives run-matrix
    miles_root: Path | None = field(
        default=None, repr=False
    )  # the checkout it is checked with (--miles-root)
    # what building the cell found worth saying (a preset taken from the checkout): every command shows it
    notes: tuple[Problem, ...] = field(default=(), repr=False)

    @property
    def status(self) -> str:
        return "skipped" if self.skip else ("xfail" if self.xfail else "runnable")

    @property
    def content_hash(self) -> str:
        """A short hash of everything the launch depends on: the resolved spec, profile and preset.

        Not the gates (``expect:``): they judge a launch and never change it, and the history keys a
        band's baseline by this hash, so a band `history recommend --write` puts in a spec keeps the
        runs it was learned from. They are hashed as if empty, so that a cell without gates has the
        hash it had before gates left the hash (a gated cell's hash changed once, with that)."""
        resolved = {
            "spec": {**self.spec.model_dump(mode="json"), "expect": {}},
            "profile": self.profile.model_dump(mode="json"),
            "preset": self.preset.model_dump(mode="json"),
            # only where there are: other cells keep their hash, which history baselines match by
            **(
                {"step_presets": {k: v.model_dump(mode="json") for k, v in self.step_presets.items()}}
                if self.step_presets
                else {}
            ),
        }
        text = json.dumps(resolved, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def path(self) -> Path:
        return self.composed.path

    @property
    def launcher(self) -> Launcher:
        """What miles decides by the program the cell launches (``launch.script``)."""
        return self.launchers.launchers[self.spec.launch.script]

    def location(self, *key: str) -> Location:
        return self.composed.location(key)

    def flag(self, name: str, default: Any = None) -> Any:
        """The value miles gets for --name: the spec's flag, else MODEL_ARGS', else ``default``."""
        return self._flags.get(name, default)

    @cached_property
    def _flags(self) -> dict[str, Any]:
        """Every flag under its canonical name: rules see --sglang-ep-size whichever alias was written."""
        merged = {**self.preset.model_args, **self.spec.args.flags()}
        if self.flags is None:
            return merged
        index = self.flags.catalog.index(self.backend)
        return {(index[name].name if name in index else name): value for name, value in merged.items()}

    @cached_property
    def references(self) -> tuple[tuple[tuple[str, ...], str, bool], ...]:
        """(place, text, whether a key) of every string of the spec that holds ``${``: walked once
        for the rules on hook, prepared and run-id references
        (:func:`runner.spec.runtime.hooks.references`)."""
        from runner.spec.runtime.hooks import references

        return references(self.spec)

    @cached_property
    def backend(self) -> str:
        """The training backend whose parser reads the flags (miles' --train-backend)."""
        return str(
            self.spec.args.flags().get(
                "train-backend", self.preset.model_args.get("train-backend", "megatron")
            )
        )

    def spelling(self, name: str) -> tuple[str | None, str] | None:
        """(group, the name as written) of --name or an alias of it; group None: MODEL_ARGS."""
        for group, flags in self.spec.args.groups():
            if name in flags:
                return group, name
        if name in self.preset.model_args:
            return None, name
        return self._alias_spelling(name) if self.flags is not None else None

    def _alias_spelling(self, name: str) -> tuple[str | None, str] | None:
        assert self.flags is not None
        index = self.flags.catalog.index(self.backend)
        wanted = index[name].name if name in index else name
        for group, flags in self.spec.args.groups():
            for written in flags:
                if written in index and index[written].name == wanted:
                    return group, written
        for written in self.preset.model_args:
            if written in index and index[written].name == wanted:
                return None, written
        return None

    def where(self, name: str) -> Location:
        """Where --name (or an alias) was written: in the spec, else the preset, else the spec's file."""
        found = self.spelling(name)
        if found is None:
            return Location(self.path)
        group, written = found
        if group is None:
            return self.preset_source.location(("model_args", written))
        return self.location("args", group, written)
