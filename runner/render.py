"""render: cell -> launch. Pure: argv lists and env dicts, nothing run.

The launch is what miles' ``execute_train`` would do for the test: prepare
steps, a Ray head, one job submission whose entrypoint is
``python3 <miles>/<train script> MODEL_ARGS... <test flags>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from typing import Any, Literal

from typing_extensions import assert_never

from runner import shell
from runner.cell import Cell
from schemas import GROUPS, ModelPreset
from schemas.conventions import EnvDefault, LaunchConventions
from schemas.spec import (
    Conversion,
    ConvertTorchDist,
    HfDownload,
    Mkdir,
    PatchHfConfig,
    PrepareStep,
    Remove,
    Service,
    WriteFile,
)
from schemas.values import flag_tokens

Phase = Literal["prepare", "cluster", "submit"]
MILES_ROOT_REFERENCE = "${MILES_ROOT}"


@dataclass(frozen=True)
class Command:
    phase: Phase
    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    skip_if: str = ""  # when the step need not run, in words
    guard: tuple[str, ...] = ()  # a ``test`` argv: the step is skipped when it succeeds
    stdin: str = ""  # a program the command reads on stdin (``python3 -``)
    listens: int = 0  # a service: it stays up, ready once 127.0.0.1:PORT answers (and left alone if it does)

    @property
    def line(self) -> str:
        """The command alone, quoted: ``shlex.split`` gives back env assignments and argv."""
        return shell.line(self.argv, self.env)

    @property
    def shell(self) -> str:
        """The command as the script runs it: behind its guard, with its program on stdin."""
        text = self.line
        if self.listens:
            return _service_shell(self.name, text, self.listens)
        if self.guard:
            text = f"{_test_text(self.guard)} || {text}"
        if self.stdin:
            end = HEREDOC
            while end in self.stdin.splitlines():  # a text that holds the delimiter gets another one
                end += "_"
            text += f" <<'{end}'\n{self.stdin.rstrip()}\n{end}"
        return text


HEREDOC = "RUN_MATRIX_PROGRAM"
SERVICE_SECONDS = 30  # how long a service may take to answer (miles' wait_for_server_ready)


def _service_shell(name: str, line: str, port: int) -> str:
    """Started in the background unless the port answers already, then waited for."""
    answers = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null"
    failed = shell.quote(f"{name} did not answer on 127.0.0.1:{port} within {SERVICE_SECONDS} s")
    return (
        f"{answers} || {{ {line} & }}\n"
        f"for _ in $(seq {SERVICE_SECONDS}); do {answers} && break; sleep 1; done\n"
        f"{answers} || {{ echo {failed} >&2; exit 1; }}"
    )


def _test_text(guard: tuple[str, ...]) -> str:
    """``[ -e DIR ]`` for a ``test`` argv; anything else as its own line."""
    if guard[0] == "test":
        return "[ " + " ".join(shell.quote(t) for t in guard[1:]) + " ]"
    return shell.line(guard)


@dataclass(frozen=True)
class Launch:
    """The rendered launch of one cell."""

    id: str
    train_script: str
    num_gpus_per_node: int
    model_args: tuple[str, ...]
    train_args: tuple[str, ...]
    env: dict[str, str]
    probes: dict[str, str]  # env vars decided on the node at launch: name -> shell probe
    commands: tuple[Command, ...]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["commands"] = [{**asdict(c), "shell": c.shell} for c in self.commands]
        return data


@dataclass(frozen=True)
class Context:
    """What render needs beyond the cell: the caller's world, passed in, never read."""

    caller_env: Mapping[str, str] = field(default_factory=dict)
    miles_root: str = MILES_ROOT_REFERENCE
    model_args: Sequence[str] | None = None  # MODEL_ARGS read from a checkout, else the preset's
    conventions: LaunchConventions | None = None  # a checkout's own execute_train, else the cell's


def render(cell: Cell, context: Context = Context()) -> Launch:
    if context.conventions is not None:
        cell = replace(cell, conventions=context.conventions)
    model_args = tuple(context.model_args) if context.model_args is not None else preset_tokens(cell)
    env, probes = runtime_env(cell, context.caller_env, context.miles_root)
    train_args = tuple(_train_args(cell, context.caller_env))
    commands = (
        *(_prepare(name, step, cell, context, model_args) for name, step in cell.spec.prepare.items()),
        _ray_start(cell),
        *map(_service, cell.spec.launch.before_submit),
        _submit(cell, context, env, model_args + train_args),
    )
    return Launch(
        cell.id,
        cell.spec.launch.script,
        cell.spec.cluster.gpus_per_node,
        model_args,
        train_args,
        env,
        probes,
        commands,
    )


def preset_tokens(cell: Cell) -> tuple[str, ...]:
    return _tokens(cell.preset)


def _tokens(preset: ModelPreset) -> tuple[str, ...]:
    return tuple(t for name, value in preset.model_args.items() for t in flag_tokens(name, value))


def runtime_env(
    cell: Cell, caller_env: Mapping[str, str], miles_root: str = MILES_ROOT_REFERENCE
) -> tuple[dict[str, str], dict[str, str]]:
    """miles' default env vars in miles' order, then the test's own (a path list merged with them)."""
    conventions = cell.conventions
    fill = {
        "master_addr": cell.spec.launch.master_addr,
        "megatron_path": cell.spec.launch.megatron_path or conventions.megatron_path,
        "miles_root": miles_root,
    }
    env: dict[str, str] = {}
    probes: dict[str, str] = {}
    lists: list[EnvDefault] = []
    backend = cell.flag("train-backend", "megatron")
    for default in conventions.runtime_env:
        if default.backend not in (None, backend):
            continue
        if default.path_list:
            lists.append(default)
        elif default.from_caller and default.name in caller_env:
            env[default.name] = _secret_safe(default.name, caller_env[default.name], conventions.secrets)
        elif default.probe:
            env[default.name] = f"${{{default.name}}}"
            probes[default.name] = conventions.probes[default.probe]
        elif default.value is not None:
            env[default.name] = default.value.format(**fill)
    env.update(cell.spec.env)
    for default in lists:  # as miles assigns it last: in the test's place if it set one, else at the end
        parts = [
            (default.value or "").format(**fill),
            env.get(default.name, ""),
            caller_env.get(default.name, ""),
        ]
        env[default.name] = ":".join(dict.fromkeys(p for part in parts for p in part.split(":") if p))
    return env, probes


def _secret_safe(name: str, value: str, secrets: Sequence[str]) -> str:
    return f"${{{name}}}" if name in secrets else value


def _train_args(cell: Cell, caller_env: Mapping[str, str]) -> Iterator[str]:
    for group in GROUPS:
        if group == "perf" and "WANDB_API_KEY" in caller_env:
            yield from _wandb_args(cell)  # upstream inserts them between grpo and perf
        for name, value in getattr(cell.spec.args, group).items():
            yield from flag_tokens(name, value)


def _wandb_args(cell: Cell) -> list[str]:
    project = cell.spec.wandb.project or "miles-" + cell.id.rsplit("/", 1)[-1]
    group = cell.id.replace("/", "-")
    return [
        token.format(project=project, group=group) if "{" in token and "${" not in token else token
        for token in cell.conventions.wandb_flags
    ]


def _prepare(
    name: str, step: PrepareStep, cell: Cell, context: Context, model_args: tuple[str, ...]
) -> Command:
    python = cell.conventions.python
    root = context.miles_root
    match step:
        case WriteFile():
            return Command("prepare", name, ("cp", "/dev/stdin", step.path), stdin=step.text)
        case Mkdir():
            return Command("prepare", name, ("mkdir", "-p", *step.paths))
        case HfDownload():
            kind = ("--repo-type", "dataset") if step.repo_type == "dataset" else ()
            argv = ("hf", "download", *kind, step.repo, "--local-dir", step.local_dir)
            return _exists_guarded(name, argv, step.local_dir)
        case PatchHfConfig():
            return _patch_config(name, step, python)
        case Remove():
            return Command("prepare", name, ("rm", "-rf", "--", *step.paths))
        case ConvertTorchDist():
            return _convert_torch_dist(name, step, cell, root, model_args)
        case Conversion():
            extra = [t for flag, value in step.extra.items() for t in flag_tokens(flag, value)]
            argv = (
                step.python,
                f"{root}/tools/{step.tool}",
                step.source_flag,
                step.model_dir,
                step.output_flag,
                step.save_dir,
                *extra,
            )
            return _exists_guarded(name, argv, step.done_marker)
        case _:
            assert_never(step)


def _convert_torch_dist(
    name: str, step: ConvertTorchDist, cell: Cell, root: str, model_args: tuple[str, ...]
) -> Command:
    """miles' converter under torchrun, skipped once the checkpoint says release."""
    parallel = [t for flag, value in step.parallel.items() for t in flag_tokens(flag, value)]
    argv = (
        "torchrun",
        "--nproc-per-node",
        str(step.nproc_per_node),
        f"{root}/tools/convert_hf_to_torch_dist.py",
        *_convert_model_args(step, cell, model_args),
        "--hf-checkpoint",
        step.hf_checkpoint,
        "--save",
        step.save,
        *parallel,
    )
    marker = f"{step.save}/latest_checkpointed_iteration.txt"
    return Command(
        "prepare",
        name,
        argv,
        {"PYTHONPATH": step.megatron_path or cell.conventions.megatron_path},
        skip_if=f"{marker} says release",
        guard=("grep", "-qsx", "release", marker),
    )


def _convert_model_args(step: ConvertTorchDist, cell: Cell, model_args: tuple[str, ...]) -> tuple[str, ...]:
    """MODEL_ARGS of the type the step converts for: the cell's, or another's preset."""
    if step.model_type is None or step.model_type == cell.spec.model.type:
        return model_args
    return _tokens(cell.step_presets[step.model_type])


def _exists_guarded(name: str, argv: tuple[str, ...], output: str) -> Command:
    return Command("prepare", name, argv, skip_if=f"{output} exists", guard=("test", "-e", output))


def _patch_config(name: str, step: PatchHfConfig, python: str) -> Command:
    """The patch program itself goes on stdin: the node needs python3, not run-matrix."""
    argv: tuple[str, ...] = (python, "-", step.config, "--set", json.dumps(step.set))
    if step.unless:
        argv += ("--unless", json.dumps(step.unless))
    if step.copy_rope_theta:
        argv += ("--copy-rope-theta",)
    program = resources.files("runner").joinpath("patch_hf_config.py").read_text(encoding="utf-8")
    return Command(
        "prepare", name, argv, skip_if=f"{step.config} is absent or already patched", stdin=program
    )


def _ray_start(cell: Cell) -> Command:
    argv = (
        "ray",
        "start",
        "--head",
        "--node-ip-address",
        cell.spec.launch.master_addr,
        "--num-gpus",
        str(cell.spec.cluster.gpus_per_node),
        *cell.conventions.ray_start,
    )
    return Command("cluster", "ray-head", argv)


MOONCAKE_MASTER_PORT = 50051  # miles' MOONCAKE_MASTER_PORT; its metrics port is 0 (none)


def _service(name: Service) -> Command:
    """What miles' hook starts between ``ray start`` and the submission."""
    match name:
        case "mooncake-master":
            argv = ("mooncake_master", "--rpc_port", str(MOONCAKE_MASTER_PORT), "--metrics_port", "0")
            return Command(
                "cluster",
                name,
                argv,
                skip_if=f"127.0.0.1:{MOONCAKE_MASTER_PORT} already answers",
                listens=MOONCAKE_MASTER_PORT,
            )
        case _:
            assert_never(name)


def _submit(cell: Cell, context: Context, env: dict[str, str], entry_args: tuple[str, ...]) -> Command:
    address = f"http://{cell.spec.launch.master_addr}:{cell.conventions.ray_dashboard_port}"
    runtime_env = json.dumps({"env_vars": env})
    argv = (
        "ray",
        "job",
        "submit",
        f"--address={address}",
        f"--runtime-env-json={runtime_env}",
        "--",
        cell.conventions.python,
        f"{context.miles_root}/{cell.spec.launch.script}",
        *entry_args,
    )
    return Command("submit", "train", argv)


def to_shell(launch: Launch, source: str) -> str:
    """The launch as a bash script a person could run; ``bash -n`` accepts it."""
    everything = [t for c in launch.commands for t in (*c.argv, *c.env.values())]
    needed = dict.fromkeys(name for token in everything for name in shell.references(token))
    lines = [
        "#!/usr/bin/env bash",
        f"# {launch.id}: rendered by run-matrix from {source}; nothing was run.",
        "set -euo pipefail",
    ]
    lines += [f': "${{{name}:?set {name}}}"' for name in needed if name not in launch.probes]
    lines += [f'export {name}="${{{name}:-$({probe})}}"' for name, probe in launch.probes.items()]
    for command in launch.commands:
        note = f" (skipped when {command.skip_if})" if command.skip_if else ""
        lines += ["", f"# {command.phase}: {command.name}{note}", command.shell]
    return "\n".join(lines) + "\n"
