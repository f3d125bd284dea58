"""The resolved spec: what one cell of the matrix declares."""

from __future__ import annotations

import json
import math
import posixpath
import re
from pathlib import PurePosixPath
from typing import Annotated, Any, ClassVar, Literal, cast, get_args

from pydantic import Field, JsonValue, PositiveInt, field_validator

from schemas import calls
from schemas.ci import CI
from schemas.run import Expectation, Requirement, Retry
from schemas.values import EnvValue, Flags, FlagValue, Model, ModelArgs

Group = Literal["ckpt", "rollout", "optimizer", "grpo", "perf", "sglang", "ci", "misc"]
GROUPS: tuple[Group, ...] = get_args(Group)
TrainScript = Literal["train.py", "train_async.py"]
SAFE_PATH = re.compile(r"/[\w.+,=@%:/-]*")  # nothing a shell expands or splits, no control characters


class ModelRef(Model):
    type: str | None = Field(
        default=None,
        description="Megatron model type: miles/models/<type>.yaml, scripts/models/<type>.sh (MODEL_ARGS);"
        " none for the FSDP backend (--train-backend fsdp), which reads the HF checkpoint",
    )
    args: ModelArgs = Field(
        default={},
        description="MODEL_ARGS values other than the preset's, each in the preset's own place: what a test"
        " gets by setting a model script's knob (MODEL_ARGS_NUM_LAYERS=4 -> num-layers: 4)",
    )


class Cluster(Model):
    nodes: PositiveInt = 1
    gpus_per_node: PositiveInt = Field(description="what `ray start --num-gpus` gets on each node")


Service = Literal["mooncake-master"]


def pythonpath(value: str) -> str:
    """PYTHONPATH entries: each an absolute path or a ${...} reference, none empty."""
    for entry in value.split(":"):
        if not entry.startswith(("/", "${")):
            raise ValueError(
                f"{value!r}: each PYTHONPATH entry is an absolute path (or a ${{...}} reference),"
                f" got {entry!r}"
            )
    return value


MAX_CALL_ARGS = 64 * 1024  # bytes of a call's JSON arguments: one argv string (Linux: 128 KiB at most)


class Called(Model):
    """A function of the checkout's that run-matrix calls, given ``args`` by keyword (``verify:``
    after the job, a ``launch.before_submit`` hook before it)."""

    call: str = Field(
        description="what to call: module.function of a check the launch conventions list under verifiers:"
        " (miles.utils.test_utils.comparisons.metrics.compare_metrics, ...), or PATH.py:function, a function"
        " a test of the checkout defines itself (tests/e2e/long/test_qwen3_0.6B_verifiers.py:verify), the"
        " path relative to the checkout's root",
        json_schema_extra={"pattern": calls.PATTERN},
    )
    args: dict[str, JsonValue] = Field(
        default={},
        description="its keyword arguments, as JSON values; on the node each is converted by the function's"
        " annotation (a mapping into the dataclass or pydantic model it names, text into a Path)",
    )

    @field_validator("call")
    @classmethod
    def _callable(cls, call: str) -> str:
        """One of the two forms, as text (schemas/calls.py); nothing of it is evaluated."""
        why = calls.wrong(call)
        if why is not None:
            raise ValueError(why)
        return call

    @field_validator("args")
    @classmethod
    def _finite(cls, args: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return json_arguments(args)


def json_arguments(args: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Keyword arguments that travel as one JSON argv string: finite numbers (JSON has no NaN or
    infinity, which Python's json would pass on, as no other reader would), and few enough bytes."""
    stack: list[tuple[str, JsonValue]] = list(args.items())
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}: {value} is no JSON number: write a finite one")
        if isinstance(value, list):
            stack += [(f"{where}[{i}]", item) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            stack += [(f"{where}.{key}", item) for key, item in value.items()]
    size = len(json.dumps(args, separators=(",", ":")).encode())
    if size > MAX_CALL_ARGS:
        raise ValueError(
            f"{size} bytes as JSON; they travel as one argument of the function's command line, which"
            f" Linux caps at 128 KiB: at most {MAX_CALL_ARGS} (pass a file's path instead)"
        )
    return args


class Verify(Called):
    """A check of the checkout's own, run once the cell's job succeeded (miles' tests call it after
    ``execute_train``): the function ``call`` names, given ``args`` by keyword."""


PUBLIC_NAME = r"[A-Za-z][A-Za-z0-9_]*"  # a method or attribute of what a hook returned: no dots, no _private


class Stop(Model):
    """How a hook's handle is stopped once the job has ended: a method of what the hook returned,
    called with ``args`` by keyword (miles' soak test: ``injector.stop_and_join(timeout_seconds=5)``)."""

    call: str = Field(
        description="a public method of what the hook returned (stop_and_join): a plain name, no dots,"
        " not starting with _",
        json_schema_extra={"pattern": f"^{PUBLIC_NAME}$"},
    )
    args: dict[str, JsonValue] = Field(
        default={}, description="its keyword arguments, as JSON values, converted by its annotations"
    )

    @field_validator("call")
    @classmethod
    def _public(cls, call: str) -> str:
        if not re.fullmatch(PUBLIC_NAME, call):
            raise ValueError(
                f"{call!r} is no public method name: a plain name (letters, digits, _), no dots, not"
                " starting with _ (the method of what the hook returned, as stop_and_join)"
            )
        return call

    @field_validator("args")
    @classmethod
    def _finite(cls, args: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return json_arguments(args)


class Hook(Called):
    """A hook the test defines itself, called with arguments between ``ray start`` and the submission
    (``{call: PATH.py:function, args: {...}}``; one without arguments is written as its call alone)."""

    call: str = Field(
        description="PATH.py:function, a top-level function a test of the checkout defines, the path relative"
        " to the checkout's root",
        json_schema_extra={"pattern": f"^{calls.OWN}$"},
    )
    stop: Stop | None = Field(
        default=None,
        description="called once the job has ended, before the verify jobs: a method of what the hook"
        " returned ({call: stop_and_join, args: {timeout_seconds: 5}}); then the hook reports the attributes"
        " verify args read ($${hook:FUNCTION.ATTRIBUTE}) and its process ends",
    )

    @field_validator("call")
    @classmethod
    def _own(cls, call: str) -> str:
        if not calls.is_own(call):
            raise ValueError(
                f"{call!r} is no PATH.py:function: a hook is a function a test of the checkout defines"
            )
        return call


class Launch(Model):
    script: TrainScript = Field(description="train.py (sync; the only one with --colocate) or train_async.py")
    master_addr: str = "127.0.0.1"
    before_submit: list[str | Hook] = Field(
        default=[],
        description="what runs between `ray start` and the job's submission (miles' before_ray_job_submit):"
        " mooncake-master is U.start_mooncake_master, the Mooncake store's master on 127.0.0.1:50051,"
        " left as it is when one already answers there; PATH.py:function is a hook a test of the checkout"
        " defines (tests/test_external_rollout.py:_launch_background), the path relative to the checkout's"
        " root, called with no arguments ({call: PATH.py:function, args: {...}} with some) and kept running,"
        " with all it started, until the job has ended; one with stop: (or whose state a verify argument"
        " reads, $${hook:FUNCTION.ATTRIBUTE}) is then stopped and reports that state before the verify jobs",
    )

    @field_validator("megatron_path")
    @classmethod
    def _absolute_entries(cls, value: str | None) -> str | None:
        return value if value is None else pythonpath(value)

    @field_validator("before_submit")
    @classmethod
    def _known_once_each(cls, entries: list[str | Hook]) -> list[str | Hook]:
        for entry in entries:
            if isinstance(entry, Hook) or entry in get_args(Service):
                continue  # a hook given arguments is checked by its own model
            if not calls.is_own(entry):
                raise ValueError(
                    f"{entry!r} is no service run-matrix starts ({', '.join(get_args(Service))}) and no"
                    " PATH.py:function (a hook a test of the checkout defines)"
                )
            why = calls.wrong(entry)
            if why is not None:
                raise ValueError(why)
        services = [entry if isinstance(entry, str) else entry.call for entry in entries]
        twice = sorted({s for s in services if services.count(s) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} named twice: a service or hook is started once")
        return entries

    def started(self) -> list[tuple[int, Service | Hook]]:
        """Each ``before_submit`` entry with its index: a service run-matrix knows, or a hook of the
        test's own (one written as its call alone takes no arguments)."""
        found: list[tuple[int, Service | Hook]] = []
        for index, entry in enumerate(self.before_submit):
            if isinstance(entry, str) and calls.is_own(entry):
                entry = Hook(call=entry)
            found.append((index, entry if isinstance(entry, Hook) else cast(Service, entry)))
        return found

    megatron_path: str | None = Field(
        default=None,
        description="execute_train's megatron_path: the PYTHONPATH entries after the checkout; default: the"
        " launch conventions' (a test may put Transformer Engine's sources before Megatron's)",
    )


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
    megatron_path: str | None = Field(
        default=None,
        description="the Megatron (and what else) the converter imports, as PYTHONPATH entries;"
        " default: the launch conventions' (a test may put Transformer Engine's sources first)",
    )

    @field_validator("megatron_path")
    @classmethod
    def _absolute_entries(cls, value: str | None) -> str | None:
        return value if value is None else pythonpath(value)


class Remove(Model):
    """``rm -rf`` of a test's own outputs, so the conversions after it run again (it runs every time)."""

    kind: Literal["remove"]
    paths: list[str] = Field(min_length=1, description="absolute paths, each at least two levels deep")

    @field_validator("paths")
    @classmethod
    def _deep_enough(cls, paths: list[str]) -> list[str]:
        """What ``rm -rf`` gets is what was checked: a plain path, as written, that no shell changes."""
        for path in paths:
            parts = PurePosixPath(path).parts
            plain = path == posixpath.normpath(path) and not path.startswith("//")
            if not plain or len(parts) < 3 or not SAFE_PATH.fullmatch(path):
                raise ValueError(
                    f"{path!r}: a path to remove is absolute and plain (no '..', '.', '//' or trailing '/';"
                    " no '$', quotes, globs or control characters), at least two levels below /"
                    " (/root/models/X, not /root)"
                )
        return paths


class Conversion(Model):
    """An HF checkpoint -> another HF checkpoint, by one of miles' ``tools/*.py``; skipped once done."""

    tool: ClassVar[str]
    source_flag: ClassVar[str] = "--model-dir"
    output_flag: ClassVar[str] = "--save-dir"
    done_file: ClassVar[str] = ""  # a file of save_dir that says the output is complete; "": it exists
    model_dir: str
    save_dir: str
    extra: Flags = {}
    python: str = Field(default="python", description="the interpreter upstream's prepare runs it with")

    @property
    def done_marker(self) -> str:
        """The path whose presence skips the step."""
        return f"{self.save_dir}/{self.done_file}" if self.done_file else self.save_dir


class ConvertFp8(Conversion):
    tool = "convert_hf_to_fp8.py"
    kind: Literal["convert-fp8"]


class ConvertInt4(Conversion):
    tool = "convert_hf_to_int4_direct.py"
    kind: Literal["convert-int4"]


class ConvertNvfp4(Conversion):
    tool = "convert_hf_to_nvfp4.py"
    kind: Literal["convert-nvfp4"]


class ConvertMxfp8(Conversion):
    tool = "convert_hf_to_mxfp8.py"
    kind: Literal["convert-mxfp8"]


class CastFp8Bf16(Conversion):
    """miles' ``fp8_cast_bf16(src, dst)``: an FP8 checkpoint back to BF16 (a reference for training)."""

    tool = "fp8_cast_bf16.py"
    source_flag = "--input-fp8-hf-path"
    output_flag = "--output-bf16-hf-path"
    done_file = "model.safetensors.index.json"  # the helper's own skip test
    kind: Literal["cast-fp8-bf16"]


class DequantizeKimiInt4(Conversion):
    """Kimi's INT4 checkpoint -> BF16, the reference the Megatron bridge loads."""

    tool = "convert_kimi_int4_to_bf16.py"
    output_flag = "--output-dir"
    kind: Literal["dequantize-kimi-int4"]


TOOL_STEPS: tuple[type[Conversion], ...] = (
    ConvertFp8,
    ConvertInt4,
    ConvertNvfp4,
    ConvertMxfp8,
    CastFp8Bf16,
    DequantizeKimiInt4,
)
ToolStep = ConvertFp8 | ConvertInt4 | ConvertNvfp4 | ConvertMxfp8 | CastFp8Bf16 | DequantizeKimiInt4

PrepareStep = Annotated[
    WriteFile | Mkdir | Remove | HfDownload | PatchHfConfig | ConvertTorchDist | ToolStep,
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
    verify: dict[str, Verify] = Field(
        default={},
        description="run in this order on the cluster once the job succeeded; the cell fails when one raises",
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
