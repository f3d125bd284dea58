"""How miles launches a test (``execute_train``), as data: miles/launch/<date>-<commit8>.yaml."""

from typing import Literal

from pydantic import Field

from schemas.values import Model


class EnvDefault(Model):
    """One runtime env var that miles sets before the test's own."""

    name: str
    value: str | None = Field(default=None, description="{master_addr} is replaced")
    from_caller: bool = Field(default=False, description="the caller's value wins when set")
    probe: str | None = Field(default=None, description="else decided on the node by this probe (see probes)")
    on_rocm: str | None = Field(
        default=None,
        description="on ROCm hardware, this value in place of the probe (one that asks NVIDIA's tools, which "
        "a ROCm node lacks, and so always prints it there)",
    )
    backend: str | None = Field(default=None, description="only for this --train-backend (megatron, fsdp)")
    path_list: bool = Field(
        default=False,
        description="a PATH-like list: the test's own value and the caller's follow this one, without "
        "repeats, where the test sets it (else after the test's own env vars)",
    )


class Verifier(Model):
    """One check a miles checkout offers a spec's ``verify:``: its parameters by name."""

    required: list[str] = Field(default=[], description="parameters without a default")
    optional: list[str] = Field(default=[], description="parameters with one")


class LaunchConventions(Model):
    miles_commit: str | None = Field(default=None, description="the miles commit whose execute_train this is")
    python: str = "python3"
    megatron_path: str
    runtime_env: list[EnvDefault]
    probes: dict[str, str] = Field(description="shell commands that print a value, run on the node at launch")
    ray_dashboard_port: int = 8265
    ray_start: list[str] = Field(description="arguments of `ray start` after --num-gpus")
    secrets: list[str] = Field(description="env vars rendered only as ${NAME} references")
    secret_flags: dict[str, str] = Field(
        default={}, description="flags whose value is a secret -> the env var that should hold it"
    )
    critic_placement: Literal["own", "actor"] = Field(
        default="own",
        description="where miles' placement group puts a critic: on GPUs of its own (after the actor's)"
        " or on the actor's (miles/ray/placement_group.py)",
    )
    verifiers: dict[str, Verifier] = Field(
        default={},
        description="module.function -> parameters: the checkout's checks of a run's output that a spec's"
        " verify: may call (those miles' tests call after execute_train)",
    )
    output_flags: list[str] = Field(
        default=[],
        description="flags whose value is a folder the run writes (a later cell of the spec may read a"
        " file under it at launch: $${read-integer:PATH})",
    )
    wandb_flags: list[str] = Field(
        description="flags added when WANDB_API_KEY is set; {project} {group} replaced"
    )
