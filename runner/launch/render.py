"""render: cell -> launch. Pure: argv lists and env dicts, nothing run.

The launch is what miles' ``execute_train`` would do for the test: prepare
steps, a Ray head, the services of its hook, one job submission whose entrypoint is
``python3 <miles>/<train script> MODEL_ARGS... <test flags>``, then, once it succeeded, one job
per ``verify:`` entry that calls the checkout's check with its arguments.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from runner.cells.cell import Cell
from runner.launch import programs, steps
from runner.launch.command import Command
from runner.launch.programs import (
    HOOK_PROGRAM,
    HOOK_READY,
    HOOK_REPORT_PROGRAM,
    HOOK_REPORTED,
    VERIFY_PROGRAM,
    asked,
)
from runner.launch.runtime_env import MILES_ROOT_REFERENCE, runtime_env
from runner.spec.runtime import hooks, prepared, reads, run_id
from schemas import GROUPS, calls
from schemas.calls import Hook, Verify
from schemas.conventions import LaunchConventions
from schemas.prepare import Call
from schemas.values import flag_tokens


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
    # flag values read at launch from a file an earlier cell wrote: shell variable -> flag, file, conversion
    reads: dict[str, dict[str, str]] = field(default_factory=dict)
    # verify arguments that read a hook's state once the job has ended: verify name -> key, hook, attribute
    hook_reads: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    # flags that take what a prepare call returned: shell variable -> step, call, function, reference, flags
    prepared: dict[str, dict[str, Any]] = field(default_factory=dict)
    # flags that hold $${run-id}, the name of each attempt (``--save``, ...), in launch order
    run_id: tuple[str, ...] = ()

    def flags(self) -> dict[str, tuple[str, ...]]:
        """The job's argv (MODEL_ARGS, then the test's flags) as flag -> values; a repeated flag keeps
        its last values, as argparse does."""
        flags: dict[str, list[str]] = {}
        current: str | None = None
        for token in (*self.model_args, *self.train_args):
            if token.startswith("--"):
                current = token[2:]
                flags[current] = []
            elif current is not None:
                flags[current].append(token)
        return {name: tuple(values) for name, values in flags.items()}

    def to_json(self) -> dict[str, Any]:
        """Its fields; ``prepared`` only where a flag takes a call's result and ``run_id`` only where a
        flag names its run, so every other launch reads as it always has."""
        data = asdict(self)
        data["commands"] = [command.to_json() for command in self.commands]
        for name in ("prepared", "run_id"):
            if not data[name]:
                del data[name]
        if self.run_id:
            data["run_id"] = {"variable": run_id.VARIABLE, "flags": list(self.run_id)}
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
        *(
            steps.prepare(name, step, cell, context.miles_root, model_args)
            for name, step in cell.spec.prepare.items()
        ),
        _ray_start(cell),
        *_before_submit(cell, context.miles_root),
        _submit(cell, context, env, model_args + train_args),
        *(_verify(cell, env, name, check, context.miles_root) for name, check in cell.spec.verify.items()),
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
        launch_reads(train_args),
        verify_hook_reads(cell),
        launch_prepared(cell),
        tuple(run_id.flags(cell.spec)),
    )


def verify_hook_reads(cell: Cell) -> dict[str, list[dict[str, str]]]:
    """What each verify entry's arguments read of a hook's state, at which key."""
    found: dict[str, list[dict[str, str]]] = {}
    for place, read in hooks.verify_reads(cell.spec):
        key = ".".join(place)
        found.setdefault(place[1], []).append(
            {"key": key, "hook": read.function, "attribute": read.attribute, "reference": read.reference}
        )
    return found


def launch_prepared(cell: Cell) -> dict[str, dict[str, Any]]:
    """The prepare calls whose result flags take, each under the shell variable a script reads it into."""
    found: dict[str, dict[str, Any]] = {}
    for name, flags in prepared.taken(cell.spec).items():
        step = cell.spec.prepare[name]
        assert isinstance(step, Call), "only a call step returns what a flag takes"
        function = calls.function_of(step.call)
        found[prepared.variable(function)] = {
            "step": name,
            "call": step.call,
            "function": function,
            "reference": prepared.reference(function),
            "flags": flags,
        }
    return found


def launch_reads(train_args: Sequence[str]) -> dict[str, dict[str, str]]:
    """The values ``train_args`` read at launch, each under the shell variable a script reads it into."""
    found: dict[str, dict[str, str]] = {}
    flag = ""
    for token in train_args:
        flag = token[2:] if token.startswith("--") else flag
        read = reads.parse(token)
        if read is None or any(r["reference"] == token for r in found.values()):
            continue
        name = reads.variable(flag)
        taken = itertools.chain([name], (f"{name}_{k}" for k in itertools.count(2)))  # lazily: one is free
        name = next(n for n in taken if n not in found)
        found[name] = {"flag": f"--{flag}", **read.to_json(), "reference": token}
    return found


def preset_tokens(cell: Cell) -> tuple[str, ...]:
    return steps.tokens(cell.preset)


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


def _submit(cell: Cell, context: Context, env: dict[str, str], entry_args: tuple[str, ...]) -> Command:
    entry = (cell.conventions.python, f"{context.miles_root}/{cell.spec.launch.script}", *entry_args)
    return Command("submit", "train", _job(cell, env, entry))


def _verify(cell: Cell, env: dict[str, str], name: str, check: Verify, miles_root: str) -> Command:
    if check.launched_by:  # the function that launched, called again with its launches doing nothing
        replaying = programs.call_argv(cell.conventions.python, check, miles_root, programs.REPLAY_PROGRAM)
        program = (*replaying, json.dumps(check.launched_by))
    else:
        program = programs.call_argv(cell.conventions.python, check, miles_root, VERIFY_PROGRAM)
    return Command("verify", name, _job(cell, env, program))


def _before_submit(cell: Cell, miles_root: str) -> Iterator[Command]:
    """Each service run-matrix knows (``mooncake-master``), and each hook the test defines, called on
    this machine between ``ray start`` and the submission, with the checkout's root to load it from;
    a hook is named after its function (and its place, where two share a name: their logs differ).
    One with ``stop:`` or whose state a verify argument reads (rule G11: its name is then its
    function's alone) runs the report program: asked to stop once the job has ended, it reports."""
    names = hooks.hook_functions(cell.spec)
    for index, entry in cell.spec.launch.started():
        if not isinstance(entry, Hook):
            yield steps.service(entry)
            continue
        function = calls.function_of(entry.call)
        name = f"{function}-{index}" if names.count(function) > 1 else function
        state = hooks.state_read(cell.spec, function) if names.count(function) == 1 else ()
        program = programs.call_argv(cell.conventions.python, entry, miles_root, HOOK_PROGRAM)
        if entry.stop is None and not state:
            yield Command("cluster", name, program, ready=HOOK_READY)
            continue
        stop = entry.stop.model_dump() if entry.stop else None
        reporting = (*program[:2], HOOK_REPORT_PROGRAM, *program[3:], asked(stop, state))
        yield Command("cluster", name, reporting, ready=HOOK_READY, report=HOOK_REPORTED, state=state)


def _job(cell: Cell, env: dict[str, str], entry: tuple[str, ...]) -> tuple[str, ...]:
    """``ray job submit`` of ``entry`` to the cell's head, in the launch's runtime env."""
    address = f"http://{cell.spec.launch.master_addr}:{cell.conventions.ray_dashboard_port}"
    runtime_env = json.dumps({"env_vars": env})
    return ("ray", "job", "submit", f"--address={address}", f"--runtime-env-json={runtime_env}", "--", *entry)
