"""What diff finds: one difference (both values, where each was set, the reason), and all of them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

NO_REASON = "no reason given"  # the reason of a difference a file wrote without a why:


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any
    a_source: str | None
    b_source: str | None
    why: str
    parts: tuple[str, ...] = ()  # the sub-keys that differ, for a folded entry

    @property
    def explained(self) -> bool:
        """Whether a why: (or a derivation) says why the sides differ."""
        return bool(self.why) and self.why != NO_REASON

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["parts"] = list(self.parts)
        return data


@dataclass(frozen=True)
class Diff:
    a: str
    b: str
    spec: tuple[Difference, ...]
    launch: tuple[Difference, ...]
    layout: tuple[Difference, ...]
    outside_allowed: tuple[str, ...]  # spec keys that differ but no allowed glob covers
    allowed: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "differences": [d.to_json() for d in self.spec],
            "launch": [d.to_json() for d in self.launch],
            "layout": [d.to_json() for d in self.layout],
            "allowed": list(self.allowed),
            "outside_allowed": list(self.outside_allowed),
        }
