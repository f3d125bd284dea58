"""terms: what an estimate is made of. A term is bytes on one GPU with where its formula comes from and
what it read; a term whose inputs are unknown says why instead of a number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GIB = float(1 << 30)  # a GPU's memory_gb is its HBM in GiB: an H100 80GB has 81,559 MiB

Holder = Literal["actor", "engine"]


@dataclass(frozen=True)
class Term:
    """Bytes one process holds on the GPU, and where that number comes from."""

    holder: Holder
    name: str
    bytes: float | None  # None: not estimated (``why_not`` says why)
    source: str  # the upstream file and function the formula follows, or "run-matrix" for an allowance
    inputs: str  # what it read, with the numbers
    lower: bool = False  # surely there: counted in the lower bound
    why_not: str = ""

    @property
    def gb(self) -> float:
        return (self.bytes or 0.0) / GIB

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "holder": self.holder,
            "name": self.name,
            "gb": None if self.bytes is None else round(self.gb, 2),
            "lower_bound": self.lower,
            "source": self.source,
            "inputs": self.inputs,
        }
        if self.bytes is None:
            data["not_estimated"] = self.why_not
        return data


def missing(holder: Holder, name: str, why: str, source: str = "") -> Term:
    """A term that cannot be estimated from what the cell says."""
    return Term(holder, name, None, source, "", why_not=why)


@dataclass(frozen=True)
class Phase:
    """What one GPU holds while miles is in one phase of a step (colocated: rollout, training, the
    weight update), or for the whole run (a disaggregated pool)."""

    name: str
    what: str  # in words: who is on the GPU and in what state
    terms: tuple[Term, ...]

    @property
    def estimate(self) -> float:
        return sum(t.bytes or 0.0 for t in self.terms)

    @property
    def lower_bound(self) -> float:
        return sum(t.bytes or 0.0 for t in self.terms if t.lower)

    @property
    def unknown(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.bytes is None)

    def to_json(self, memory: float) -> dict[str, object]:
        return {
            "phase": self.name,
            "what": self.what,
            "estimate_gb": round(self.estimate / GIB, 2),
            "lower_bound_gb": round(self.lower_bound / GIB, 2),
            "margin_gb": round((memory - self.estimate) / GIB, 2),
            "terms": [t.to_json() for t in self.terms],
        }
