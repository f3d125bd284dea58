"""The resolved spec: what one cell of the matrix declares."""

from typing import Any, Literal, cast, get_args

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from schemas import calls
from schemas.calls import Hook, Verify
from schemas.ci import CI
from schemas.launchers import Launchers, either

# the import side reads the prepare steps from here, where they were first written
from schemas.prepare import TOOL_STEPS as TOOL_STEPS
from schemas.prepare import Conversion as Conversion
from schemas.prepare import PrepareStep as PrepareStep
from schemas.run import Expectation, Requirement, Retry
from schemas.values import Count, EnvName, EnvValue, Flags, FlagValue, Model, ModelArgs, pythonpath

Group = Literal["ckpt", "rollout", "optimizer", "grpo", "perf", "sglang", "ci", "misc"]
GROUPS: tuple[Group, ...] = get_args(Group)


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
    nodes: Count = 1
    gpus_per_node: Count = Field(description="what `ray start --num-gpus` gets on each node")


Service = Literal["mooncake-master"]


class Launch(Model):
    script: str = Field(
        description="a launcher of miles/launchers.yaml, relative to the checkout (the schema lists them)"
    )
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

    @field_validator("script", mode="before")
    @classmethod
    def _a_launcher(cls, value: object, info: ValidationInfo) -> object:
        """One of the launchers the validation's context holds (``{"launchers": Launchers}``): they are
        data (miles/launchers.yaml), so the spec refuses another as a closed Literal would, in its words."""
        launchers = (info.context or {}).get("launchers")
        if not isinstance(launchers, Launchers):
            raise TypeError(  # a caller's bug, never a user's: runner/knowledge/launchers.py gives them
                "a spec is validated with context={'launchers': Launchers}"
            )
        if value not in launchers.scripts:
            expected = either([repr(script) for script in launchers.scripts])
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return value

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
        default={},
        description="run in this order on this machine before the cell's Ray head; each skipped when done,"
        " but write-file, remove and call, which run every time",
    )
    args: Args = Args()
    env: dict[EnvName, EnvValue] = Field(default={}, description="the test's own runtime env vars")
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
