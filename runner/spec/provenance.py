"""provenance: what every key of a composed spec remembers — each step that set it (file, line,
operation, reason) — and the composed data itself. ``explain``, ``diff`` and every error read it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from runner.errors import Location
from runner.spec.load import Key

Operation = Literal["set", "override", "replace", "delete", "resolve"]


@dataclass(frozen=True)
class Step:
    """One thing one file did to one key."""

    location: Location
    op: Operation
    value: Any = None
    why: str = ""

    def describe(self) -> str:
        text = f"{self.location}  {self.op}"
        if self.op != "delete":
            text += f" {self.value!s}" if not isinstance(self.value, dict) else " {...}"
        return text + (f"  — {self.why}" if self.why else "")


Provenance = dict[Key, tuple[Step, ...]]


@dataclass(frozen=True)
class Composed:
    """The merged data of an ``extends:`` chain, and how every key got its value."""

    data: dict[str, Any]
    provenance: Provenance
    files: tuple[Path, ...]  # every file of the chain, bases first, then the spec, then overlays
    spec: Path | None = None  # the spec file, when overlays were applied after it

    @property
    def path(self) -> Path:
        """The spec file itself (ids, hardware lookup and messages are relative to it)."""
        return self.spec or self.files[-1]

    def location(self, key: Key) -> Location:
        """Where the value of ``key`` (or its nearest written parent) was last written."""
        for depth in range(len(key), 0, -1):
            steps = self.provenance.get(key[:depth])
            if steps:
                return steps[-1].location
        return Location(self.path)
