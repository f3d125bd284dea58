"""What a spec says about running it: what it needs, what its metrics must show, how often to retry.

``requires`` is checked before anything runs (an unmet requirement skips the cell);
``expect`` bounds miles' metric lines (``step N: {...}``, ``rollout N: {...}``,
``perf N: {...}``, a critic's ``critic-step N: {...}``); ``retry`` covers
infrastructure failures only. Reasons go in the spec's ``why:``.
"""

from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt, field_validator, model_validator

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


class Band(Model):
    """A corridor around the baseline mean ``ref``: ``[ref - down, ref + up]``, each side
    ``max(rel * |ref|, abs_floor)`` (miles' ``register_ci_gate`` constraint)."""

    rel_up: NonNegativeFloat = Field(default=0, description="the corridor's top: ref + rel_up * |ref| ...")
    abs_floor_up: NonNegativeFloat = Field(default=0, description="... and at least ref + abs_floor_up")
    rel_down: NonNegativeFloat = Field(
        default=0, description="the corridor's bottom: ref - rel_down * |ref| ..."
    )
    abs_floor_down: NonNegativeFloat = Field(default=0, description="... and at most ref - abs_floor_down")

    @model_validator(mode="after")
    def _both_sides_written(self) -> "Band":
        # an unwritten side is a zero-width band that fails on any deviation: say so, as miles does
        for side in ("up", "down"):
            if not {f"rel_{side}", f"abs_floor_{side}"} & self.model_fields_set:
                raise ValueError(f"give rel_{side} or abs_floor_{side} (a side without one has zero width)")
        return self

    def corridor(self, ref: float) -> tuple[float, float]:
        return (
            ref - max(self.rel_down * abs(ref), self.abs_floor_down),
            ref + max(self.rel_up * abs(ref), self.abs_floor_up),
        )

    def describe(self) -> str:
        """``+50% (>= 0.02) / -80% (>= 0.02)``."""
        return " / ".join(
            f"{sign}{rel * 100:g}% (>= {floor:g})"
            for sign, rel, floor in (
                ("+", self.rel_up, self.abs_floor_up),
                ("-", self.rel_down, self.abs_floor_down),
            )
        )


BaselineKey = Literal["cell", "content_hash", "hardware", "miles_commit"]


class Baseline(Model):
    """Which recorded runs a band is judged against: the last ``runs`` trusted runs that share
    the ``match`` fields with this one."""

    runs: PositiveInt = Field(default=10, description="the last N trusted runs (their mean is the reference)")
    match: list[BaselineKey] = Field(
        default=["content_hash", "hardware"],
        min_length=1,
        description="what a baseline run shares with this one (cell, content_hash, hardware, miles_commit)",
    )


class Expectation(Model):
    """Bounds on one metric, e.g. ``{max: 0.1, steps: all}`` or ``{max: 1e-8, step: 0}``, and/or
    a band around the trusted history: ``{band: {rel_up: 0.5, abs_floor_up: 0.02, rel_down: 0.8,
    abs_floor_down: 0.02}, steps: all}``."""

    min: float | None = None
    max: float | None = None
    step: NonNegativeInt | None = Field(default=None, description="bound the value at this step only")
    steps: Literal["all", "last"] | list[NonNegativeInt] | None = Field(
        default=None, description="every value (all, the default), the last one, or these steps"
    )
    band: Band | None = Field(default=None, description="a corridor around the mean of the trusted baseline")
    baseline: Baseline | None = Field(default=None, description="the runs a band is judged against")
    enforce: bool | None = Field(
        default=None, description="false: report the band's verdict, never fail on it (default: true)"
    )

    @field_validator("steps", mode="before")
    @classmethod
    def _all_last_or_a_list(cls, value: object) -> object:
        if isinstance(value, str) and value not in ("all", "last"):
            raise ValueError(f"give all, last or a list of steps, not {value!r}")
        return value

    @model_validator(mode="after")
    def _one_selection_and_a_bound(self) -> "Expectation":
        if self.min is None and self.max is None and self.band is None:
            raise ValueError("give min, max, band or several")
        if self.step is not None and self.steps is not None:
            raise ValueError("give step (one step) or steps (all, last, a list), not both")
        if self.band is None and (self.baseline is not None or self.enforce is not None):
            raise ValueError("baseline and enforce belong to a band: add band: {rel_up: ..., rel_down: ...}")
        if isinstance(self.steps, list) and (not self.steps or len(set(self.steps)) != len(self.steps)):
            raise ValueError("steps: give each step once, at least one")
        return self

    @property
    def enforced(self) -> bool:
        """Whether a band out of its corridor fails the cell (``enforce: false`` only reports)."""
        return self.enforce is not False

    @property
    def bounded(self) -> bool:
        """Whether it has a fixed bound (min or max), besides or instead of a band."""
        return self.min is not None or self.max is not None

    @property
    def selection(self) -> Literal["all", "last"] | list[int]:
        """The steps judged: ``all``, ``last`` or a list (``step: N`` is ``[N]``)."""
        if self.step is not None:
            return [self.step]
        return self.steps if self.steps is not None else "all"

    def summary(self) -> str:
        """The fixed bounds and the band: ``value <= 0.1 at every step; within +50% (>= 0.02) / ...``."""
        parts = [self.describe()] if self.bounded else []
        if self.band is not None:
            baseline = self.baseline or Baseline()
            where = self.describe().removeprefix("value") if not self.bounded else ""
            parts.append(
                f"value{where} within {self.band.describe()} of the mean of the last {baseline.runs} trusted "
                f"runs (same {', '.join(baseline.match)})" + ("" if self.enforced else ", reported only")
            )
        return "; ".join(parts)

    def describe(self) -> str:
        """``0.0 <= value <= 0.1 at every step``."""
        text = (f"{self.min:g} <= " if self.min is not None else "") + "value"
        text += f" <= {self.max:g}" if self.max is not None else ""
        if self.step is not None:
            return f"{text} at step {self.step}"
        if isinstance(self.steps, list):
            return f"{text} at steps {', '.join(map(str, self.steps))}"
        return f"{text} at the last step" if self.steps == "last" else f"{text} at every step"


class Retry(Model):
    infra: NonNegativeInt = Field(
        default=0,
        description="resubmissions after an infrastructure failure (Ray unreachable, job lost); "
        "a test failure is never retried",
    )
    delay_seconds: NonNegativeFloat = Field(default=10, description="wait before resubmitting")
