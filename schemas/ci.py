"""The ``ci:`` block of a spec: where and when a CI runs its cells.

miles' tests register themselves with ``register_cuda_ci`` / ``register_rocm_ci``
(backend, suite, est_time, labels, nightly); ``import`` fills this block from those calls
and ``ci plan`` reads it to route cells to runner classes.
"""

from typing import Literal

from pydantic import Field, PositiveInt

from schemas.values import GitHubLabel, Model


class CI(Model):
    backend: Literal["cuda", "rocm"] | None = Field(
        default=None, description="miles' register_cuda_ci (cuda) or register_rocm_ci (rocm)"
    )
    suite: GitHubLabel | None = Field(default=None, description="miles' CI suite, e.g. stage-c-4-gpu-mi350")
    runs_on: GitHubLabel | None = Field(
        default=None, description="a runner label, when no suite names the runner"
    )
    est_time: PositiveInt | None = Field(default=None, description="estimated seconds one run takes")
    labels: list[GitHubLabel] = Field(default=[], description="free labels, e.g. the model family")
    nightly: bool = Field(default=False, description="run only in the nightly CI")
