"""prepare: the spec's prepare steps, in order, each skipped when its output is already there.

The skip conditions are those the rendered commands state (``skip_if``): a directory
that exists, a config already patched, a checkpoint whose marker says ``release``.
``mkdir`` and ``patch-hf-config`` run here; downloads and conversions run the rendered
command, their output going to the cell's log.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from runner.patch_hf_config import patched, text
from runner.render import Command
from runner.run.environment import fill
from runner.run.results import PrepareRecord, StepStatus
from schemas.spec import ConvertFp8, ConvertTorchDist, HfDownload, Mkdir, PatchHfConfig, PrepareStep

Output = Callable[[str], None]


def skip_reason(step: PrepareStep) -> str | None:
    """Why the step need not run, or None when it must."""
    match step:
        case Mkdir():
            return "every directory exists" if all(Path(p).is_dir() for p in step.paths) else None
        case HfDownload():
            return f"{step.local_dir} exists" if Path(step.local_dir).exists() else None
        case PatchHfConfig():
            return _patch_skip(step)
        case ConvertTorchDist():
            marker = Path(step.save) / "latest_checkpointed_iteration.txt"
            done = marker.is_file() and marker.read_text(errors="replace").strip() == "release"
            return f"{marker} says release" if done else None
        case ConvertFp8():
            return f"{step.save_dir} exists" if Path(step.save_dir).exists() else None


def _patch_skip(step: PatchHfConfig) -> str | None:
    path = Path(step.config)
    if not path.is_file():
        return f"{path} does not exist"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # patching it will say what is wrong
    if patched(config, step.set, step.unless, step.copy_rope_theta) is None:
        return f"{path} is already patched"
    return None


def run_step(
    name: str, step: PrepareStep, command: Command, env: Mapping[str, str], output: Output
) -> PrepareRecord:
    started = time.monotonic()
    reason = skip_reason(step)
    if reason is not None:
        return PrepareRecord(name, step.kind, "skipped", reason)
    try:
        status, detail = _run(step, command, env, output)
    except (OSError, ValueError) as exc:
        status, detail = "failed", str(exc)
    return PrepareRecord(name, step.kind, status, detail, round(time.monotonic() - started, 3))


def _run(
    step: PrepareStep, command: Command, env: Mapping[str, str], output: Output
) -> tuple[StepStatus, str]:
    match step:
        case Mkdir():
            for path in step.paths:
                Path(path).mkdir(parents=True, exist_ok=True)
            return "ran", "created " + ", ".join(step.paths)
        case PatchHfConfig():
            _patch(step)
            return "ran", f"patched {step.config}"
        case HfDownload():
            return _execute(command, env, output, f"downloaded {step.repo} to {step.local_dir}")
        case ConvertTorchDist():
            return _execute(command, env, output, f"converted {step.hf_checkpoint} to {step.save}")
        case ConvertFp8():
            return _execute(command, env, output, f"converted {step.model_dir} to {step.save_dir}")


def _patch(step: PatchHfConfig) -> None:
    path = Path(step.config)
    config = json.loads(path.read_text(encoding="utf-8"))
    result = patched(config, step.set, step.unless, step.copy_rope_theta)
    if result is not None:
        path.write_text(text(result), encoding="utf-8")


def _execute(command: Command, env: Mapping[str, str], output: Output, done: str) -> tuple[StepStatus, str]:
    """Run a rendered command, its output line by line to ``output``; Ctrl-C stops it."""
    argv = [fill(token, env, f"prepare step {command.name}") for token in command.argv]
    try:
        process = subprocess.Popen(
            argv,
            env={**os.environ, **env, **command.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        return "failed", f"{argv[0]} is not installed (not on PATH)"
    assert process.stdout is not None
    try:
        for line in process.stdout:
            output(line.rstrip("\n"))
        code = process.wait()
    except BaseException:
        process.terminate()
        process.wait()
        raise
    if code != 0:
        return "failed", f"{argv[0]} exited with code {code} (the log has its output)"
    return "ran", done
