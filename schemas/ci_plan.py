"""The JSON a ``run-matrix ci plan --format json`` prints, and ``run --shard-of`` reads."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.ci import CI

EstSource = Literal["history", "spec", "timeout", "default"]


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlannedCell(_Output):
    id: str = Field(description="the cell id, as every command names it")
    spec: str = Field(description="the spec file it comes from")
    hardware: str
    gpus: int = Field(ge=1, description="GPUs the cell needs (nodes x GPUs per node)")
    est_time: int = Field(ge=1, description="estimated seconds")
    est_source: EstSource = Field(description="where est_time comes from")
    content_hash: str
    ci: CI
    attempts: int = Field(default=1, ge=1, description="runs at most: 1 + retry.infra")
    gpu_hours: float = Field(default=0, ge=0, description="est_time x GPUs x attempts, in hours")
    changed: list[str] = Field(
        default=[], description="with --changed/--since: the changed inputs that selected it, with why"
    )


class Shard(_Output):
    shard: int = Field(ge=0, description="unique in the plan: run-matrix run --shard-of PLAN K")
    label: str = Field(description="its runner class (the label, as one word)")
    runs_on: str | list[str] = Field(description="what runs-on names")
    load: int = Field(ge=0, description="the sum of its cells' est_time, seconds")
    cells: list[str] = Field(description="cell ids, longest first")


class RunnerClassLoad(_Output):
    label: str
    runs_on: str | list[str]
    hardware: str
    gpus: int
    count: int
    cells: int = Field(description="cells planned onto the class")
    total: int = Field(description="the sum of their est_time, seconds")
    longest: int = Field(description="the longest est_time among them, seconds")
    bound: float = Field(description="no shard exceeds longest + total / count")
    shards: list[int] = Field(description="its shards' numbers")


class LeftOut(_Output):
    id: str
    hardware: str
    gpus: int
    reason: str


class CiPlan(_Output):
    version: Literal[1] = 1
    specs: list[str] = Field(description="what was planned: run --shard-of selects from these")
    nightly: bool = Field(description="nightly cells are planned too")
    cells: list[PlannedCell] = Field(description="every planned cell")
    shards: list[Shard]
    classes: list[RunnerClassLoad]
    unplaced: list[LeftOut] = Field(description="runnable cells no runner class can take, with the reason")
    left_out: list[LeftOut] = Field(description="cells not planned: skipped, or nightly without --nightly")
    gpu_hours: float = Field(
        default=0, ge=0, description="the planned cells' GPU-hours, retries at their maximum"
    )
    budget_gpu_hours: float | None = Field(default=None, description="--budget-gpu-hours, when given")
