"""What a spec says about running it: what it needs, what its metrics must show, how often to retry.

``requires`` is checked before anything runs (an unmet requirement skips the cell);
``expect`` bounds miles' metric lines (``step N: {...}``, ``rollout N: {...}``,
``perf N: {...}``, a critic's ``critic-step N: {...}``); ``retry`` covers
infrastructure failures only. Reasons go in the spec's ``why:``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, model_validator

from schemas.values import Model


class _Requirement(Model):
    optional: bool = Field(
        default=False, description="when unmet, say so in the reports but run the cell anyway"
    )


class PackageRequirement(_Requirement):
    kind: Literal["package"]
    name: str = Field(description="distribution name, as pip knows it (transformer_engine, sglang)")
    min_version: str | None = Field(default=None, description="lowest version that has what the cell needs")


class GitRequirement(_Requirement):
    kind: Literal["git"]
    contains: str = Field(description="a commit, branch or tag the checkout's HEAD must contain")
    repo: str | None = Field(default=None, description="a git checkout; default: the miles checkout")


class FileRequirement(_Requirement):
    kind: Literal["file"]
    path: str
    contains: str | None = Field(default=None, description="text the file must contain")


class EnvRequirement(_Requirement):
    kind: Literal["env"]
    name: str = Field(description="an environment variable of the machine that runs run-matrix")
    value: str | None = Field(default=None, description="the value it must have; default: any")


Requirement = Annotated[
    PackageRequirement | GitRequirement | FileRequirement | EnvRequirement,
    Field(discriminator="kind"),
]


class Expectation(Model):
    """Bounds on one metric, e.g. ``{max: 0.1, steps: all}`` or ``{max: 1e-8, step: 0}``."""

    min: float | None = None
    max: float | None = None
    step: NonNegativeInt | None = Field(default=None, description="bound the value at this step only")
    steps: Literal["all", "last"] | None = Field(
        default=None, description="bound every value (all, the default) or the last one"
    )

    @model_validator(mode="after")
    def _one_selection_and_a_bound(self) -> Expectation:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.step is not None and self.steps is not None:
            raise ValueError("give step (one step) or steps (all, last), not both")
        return self

    def describe(self) -> str:
        """``0.0 <= value <= 0.1 at every step``."""
        text = (f"{self.min:g} <= " if self.min is not None else "") + "value"
        text += f" <= {self.max:g}" if self.max is not None else ""
        if self.step is not None:
            return f"{text} at step {self.step}"
        return f"{text} at the last step" if self.steps == "last" else f"{text} at every step"


class Retry(Model):
    infra: NonNegativeInt = Field(
        default=0,
        description="resubmissions after an infrastructure failure (Ray unreachable, job lost); "
        "a test failure is never retried",
    )
    delay_seconds: NonNegativeFloat = Field(default=10, description="wait before resubmitting")
