"""The resolved spec: what one cell of the matrix declares."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import Field, PositiveInt

from schemas.ci import CI
from schemas.run import Expectation, Requirement, Retry
from schemas.values import EnvValue, Flags, FlagValue, Model

Group = Literal["ckpt", "rollout", "optimizer", "grpo", "perf", "sglang", "ci", "misc"]
GROUPS: tuple[Group, ...] = get_args(Group)
TrainScript = Literal["train.py", "train_async.py"]


class ModelRef(Model):
    type: str | None = Field(
        default=None,
        description="Megatron model type: miles/models/<type>.yaml, scripts/models/<type>.sh (MODEL_ARGS);"
        " none for the FSDP backend (--train-backend fsdp), which reads the HF checkpoint",
    )


class Cluster(Model):
    nodes: PositiveInt = 1
    gpus_per_node: PositiveInt = Field(description="what `ray start --num-gpus` gets on each node")


class Launch(Model):
    script: TrainScript = Field(description="train.py (sync; the only one with --colocate) or train_async.py")
    master_addr: str = "127.0.0.1"


class Wandb(Model):
    project: str | None = Field(default=None, description="default: miles-<spec name>")


class WriteFile(Model):
    kind: Literal["write-file"]
    path: str = Field(min_length=1, description="the file to write (a test's config or prompt data)")
    text: str = Field(description="its whole text, written again on every run")


class Mkdir(Model):
    kind: Literal["mkdir"]
    paths: list[str]


class HfDownload(Model):
    kind: Literal["hf-download"]
    repo: str
    local_dir: str
    repo_type: Literal["model", "dataset"] = "model"


class PatchHfConfig(Model):
    kind: Literal["patch-hf-config"]
    config: str = Field(description="path of the HF config.json to patch")
    set: dict[str, Any]
    unless: dict[str, Any] = Field(default={}, description="skip when the config already has these values")
    copy_rope_theta: bool = Field(default=False, description="copy rope_parameters.rope_theta to rope_theta")


class ConvertTorchDist(Model):
    kind: Literal["convert-torch-dist"]
    hf_checkpoint: str
    save: str
    nproc_per_node: PositiveInt = 4
    parallel: Flags = {}
    model_type: str | None = Field(
        default=None,
        description="the Megatron model type whose MODEL_ARGS the conversion takes; default: model.type"
        " (an FSDP cell that compares with a Megatron one converts for it)",
    )


class _Quantize(Model):
    """An HF checkpoint -> a quantized HF checkpoint, by one of miles' ``tools/convert_hf_to_*.py``."""

    tool: ClassVar[str]
    model_dir: str
    save_dir: str
    extra: Flags = {}
    python: str = Field(default="python", description="the interpreter upstream's prepare runs it with")


class ConvertFp8(_Quantize):
    tool = "convert_hf_to_fp8.py"
    kind: Literal["convert-fp8"]


class ConvertInt4(_Quantize):
    tool = "convert_hf_to_int4_direct.py"
    kind: Literal["convert-int4"]


QUANTIZE_STEPS: tuple[type[_Quantize], ...] = (ConvertFp8, ConvertInt4)

PrepareStep = Annotated[
    WriteFile | Mkdir | HfDownload | PatchHfConfig | ConvertTorchDist | ConvertFp8 | ConvertInt4,
    Field(discriminator="kind"),
]


class Args(Model):
    """miles flags without the leading --, grouped as the upstream tests group them."""

    ckpt: Flags = {}
    rollout: Flags = {}
    optimizer: Flags = {}
    grpo: Flags = {}
    perf: Flags = {}
    sglang: Flags = {}
    ci: Flags = {}
    misc: Flags = {}

    def groups(self) -> list[tuple[Group, dict[str, Any]]]:
        return [(group, getattr(self, group)) for group in GROUPS]

    def flags(self) -> dict[str, FlagValue]:
        """Every flag of every group (a flag lives in exactly one group)."""
        return {name: value for _, flags in self.groups() for name, value in flags.items()}


class Spec(Model):
    description: str = ""
    miles_version: str | None = Field(
        default=None,
        description="the miles commit whose flags the spec is checked against (a catalog in miles/flags/;"
        " default: the newest shipped; --miles-root: that checkout's own flags)",
    )
    hardware: str = Field(description="name of a profile in matrices/hardware/")
    model: ModelRef = ModelRef()
    cluster: Cluster
    launch: Launch
    vars: dict[str, Any] = Field(default={}, description="free values for ${...} references")
    prepare: dict[str, PrepareStep] = Field(
        default={}, description="run in this order; each skipped when done"
    )
    args: Args = Args()
    env: dict[str, EnvValue] = Field(default={}, description="the test's own runtime env vars")
    wandb: Wandb = Wandb()
    requires: dict[str, Requirement] = Field(
        default={}, description="what the cell needs beyond its flags; unmet: the cell is skipped"
    )
    expect: dict[str, Expectation] = Field(
        default={}, description="metric name (train/ppo_kl, perf/step_time, ...) -> bounds"
    )
    retry: Retry = Retry()
    ci: CI = Field(default=CI(), description="where and when a CI runs the cells (miles' register_*_ci)")
    why_not: dict[str, str] = Field(
        default={},
        description="dotted keys this spec deliberately leaves unset -> why (shown by `run-matrix diff`)",
    )
    todo: dict[str, str] = Field(
        default={}, description="dotted key -> a decision left to a person (run-matrix port writes these)"
    )
    allowed_deltas: list[str] = Field(
        default=[],
        description="key globs that may differ from a sibling variant; `run-matrix diff` fails on others",
    )
