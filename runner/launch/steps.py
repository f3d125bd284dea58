"""steps: a cell's prepare steps and services as the commands of its launch. Pure.

Each prepare step is a command skipped when its output is there (a guard the shell form tests
too), but for those that run every time (``write-file``, ``remove``, ``call``); a service (miles'
``before_ray_job_submit`` hook) is started after the Ray head unless its port answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from typing_extensions import assert_never

from runner.cells.cell import Cell
from runner.launch import programs
from runner.launch.command import Command
from runner.spec.runtime import prepared
from schemas import ModelPreset, calls
from schemas.prepare import (
    Call,
    Conversion,
    ConvertTorchDist,
    HfDownload,
    Mkdir,
    PatchHfConfig,
    PrepareStep,
    Remove,
    WriteFile,
)
from schemas.spec import Service
from schemas.values import flag_tokens


def tokens(preset: ModelPreset) -> tuple[str, ...]:
    """A preset's MODEL_ARGS as argv words."""
    return tuple(t for name, value in preset.model_args.items() for t in flag_tokens(name, value))


def overridden(words: Sequence[str], values: Mapping[str, Any]) -> tuple[str, ...]:
    """MODEL_ARGS words with the values of ``values``' flags replaced in place (``model.args``)."""
    out: list[str] = []
    skipping = False
    for word in words:
        if word.startswith("--"):
            skipping = word[2:] in values
            out += flag_tokens(word[2:], values[word[2:]]) if skipping else [word]
        elif not skipping:
            out.append(word)
    return tuple(out)


def prepare(name: str, step: PrepareStep, cell: Cell, root: str, model_args: tuple[str, ...]) -> Command:
    """The command of one prepare step; ``root`` is the checkout as the launch names it."""
    python = cell.conventions.python
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
        case Call():
            return _call(name, step, cell, root)
        case _:
            assert_never(step)


def _call(name: str, step: Call, cell: Cell, root: str) -> Command:
    """A test's own function, from the checkout's root, where miles' CI runs a test (and so its
    prepare()), loaded from its file there as a verify job's own check is; nothing says it is done: it
    runs every time. One whose result flags take (``$${prepared:FUNCTION}``) runs the program that
    writes it to a file, the last word: a fresh one that run (or the script, by mktemp) names."""
    python = cell.conventions.python
    if name not in prepared.taken(cell.spec):
        return Command("prepare", name, programs.call_argv(python, step, root), cwd=root, every_time=True)
    function = calls.function_of(step.call)
    argv = (
        *programs.call_argv(python, step, root, programs.PREPARED_PROGRAM),
        f"${{{prepared.file_variable(function)}}}",
    )
    return Command("prepare", name, argv, cwd=root, every_time=True, result=prepared.variable(function))


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
    return tokens(cell.step_presets[step.model_type])


def _exists_guarded(name: str, argv: tuple[str, ...], output: str) -> Command:
    return Command("prepare", name, argv, skip_if=f"{output} exists", guard=("test", "-e", output))


def _patch_config(name: str, step: PatchHfConfig, python: str) -> Command:
    """The patch program itself goes on stdin: the node needs python3, not run-matrix."""
    argv: tuple[str, ...] = (python, "-", step.config, "--set", json.dumps(step.set))
    if step.unless:
        argv += ("--unless", json.dumps(step.unless))
    if step.copy_rope_theta:
        argv += ("--copy-rope-theta",)
    program = program_text("patch_hf_config")
    return Command(
        "prepare",
        name,
        argv,
        skip_if=f"{step.config} is absent or already patched",
        stdin=program,
        program="patch_hf_config",
    )


def program_text(name: str) -> str:
    """The text of run-matrix's program ``runner/<name>.py`` (standard library only) for python3."""
    return resources.files("runner").joinpath(f"{name}.py").read_text(encoding="utf-8")


MOONCAKE_MASTER_PORT = 50051  # miles' MOONCAKE_MASTER_PORT; its metrics port is 0 (none)


def service(name: Service) -> Command:
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
