"""``runners.yaml``: the runner classes a CI has, for ``run-matrix ci plan``.

A class is a kind of runner: its label (what ``runs-on`` names), the hardware of its GPUs,
how many GPUs each runner owns (``gpus: 4`` for a 4-GPU share of an 8-GPU host, the share
chosen by the runner's visible-devices mask) and how many such runners exist.
"""

from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from schemas.values import Count, Model, github_label

MAX_RUNNERS_PER_CLASS = 1000  # a budget: shards are planned one by one
Label = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class RunnerClass(Model):
    label: Label | list[Label] = Field(
        description="what runs-on names: one label, or a list a runner must carry all of "
        '(["self-hosted", "amd", "mi350", "4gpu"])'
    )
    hardware: str = Field(description="the hardware profile of its GPUs (matrices/hardware/<name>.yaml)")
    gpus: Count = Field(le=1024, description="GPUs each runner owns (4 for a 4-GPU share of an 8-GPU host)")
    count: Count = Field(le=MAX_RUNNERS_PER_CLASS, description="how many such runners exist")
    suites: list[str] = Field(
        default=[], description="miles CI suites this class serves: a cell whose ci.suite is listed goes here"
    )

    @field_validator("label")
    @classmethod
    def _safe(cls, label: str | list[str]) -> str | list[str]:
        for each in [label] if isinstance(label, str) else label:
            github_label(each)
        return label

    @property
    def name(self) -> str:
        """The label as one word: ``self-hosted,amd,mi350,4gpu``."""
        return self.label if isinstance(self.label, str) else ",".join(self.label)


class Runners(Model):
    runners: list[RunnerClass] = Field(min_length=1, description="the runner classes")
