"""prepare: the spec's prepare steps, in order, each skipped when its output is already there.

The skip conditions are those the rendered commands state (``skip_if``): a directory
that exists, a config already patched, a checkpoint whose marker says ``release``; ``remove``
and ``call`` run every time. ``mkdir``, ``remove`` and ``patch-hf-config`` run here; downloads,
conversions and a test's own ``call`` run the rendered command (a call from the checkout's root),
their output going to the cell's log; a call whose result flags take (``$${prepared:FUNCTION}``)
writes it to a file of a fresh folder made here, and its record keeps it. Each command runs in its
own process session (recorded, and carrying the run's id), so an interrupt stops it with every
process it started.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from runner import patch_hf_config
from runner.atomic import write_text
from runner.launch import shell
from runner.launch.command import Command
from runner.results.outcome import PrepareRecord, StepStatus
from runner.run import processes
from runner.run.environment import fill
from runner.run.record import Tracker, Untracked
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

Output = Callable[[str], None]


def skip_reason(step: PrepareStep) -> str | None:
    """Why the step need not run, or None when it must."""
    match step:
        case WriteFile():
            return None  # written on every run: a stale copy is never trusted
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
        case Remove():
            return None  # it runs every time: the steps after it are to run again
        case Call():
            return None  # nothing tells that a test's own preparation is done
        case Conversion():
            return f"{step.done_marker} exists" if Path(step.done_marker).exists() else None


def _patch_skip(step: PatchHfConfig) -> str | None:
    try:
        skip, _ = patch_hf_config.planned(Path(step.config), step.set, step.unless, step.copy_rope_theta)
    except (OSError, ValueError):
        return None  # patching it will say what is wrong
    return skip or None


STOP_GRACE_SECONDS = 10.0
QUOTED = 500  # characters of a failed call's last line its record quotes (the log has all)


def run_step(
    name: str,
    step: PrepareStep,
    command: Command,
    env: Mapping[str, str],
    output: Output,
    tracker: Tracker | None = None,
) -> PrepareRecord:
    started = time.monotonic()
    reason = skip_reason(step)
    if reason is not None:
        return PrepareRecord(name, step.kind, "skipped", reason)
    result: str | None = None
    try:
        if isinstance(step, Call) and command.result:
            status, detail, result = _returning(step, command, env, output, tracker or Untracked())
        else:
            status, detail = _run(step, command, env, output, tracker or Untracked())
    except (OSError, ValueError) as exc:
        status, detail = "failed", str(exc)
    return PrepareRecord(name, step.kind, status, detail, round(time.monotonic() - started, 3), result)


def _run(
    step: PrepareStep, command: Command, env: Mapping[str, str], output: Output, tracker: Tracker
) -> tuple[StepStatus, str]:
    match step:
        case WriteFile():
            Path(step.path).parent.mkdir(parents=True, exist_ok=True)
            write_text(Path(step.path), step.text)
            return "ran", f"wrote {step.path}"
        case Mkdir():
            for path in step.paths:
                Path(path).mkdir(parents=True, exist_ok=True)
            return "ran", "created " + ", ".join(step.paths)
        case PatchHfConfig():
            patch_hf_config.apply(Path(step.config), step.set, step.unless, step.copy_rope_theta)
            return "ran", f"patched {step.config}"
        case HfDownload():
            return _execute(command, env, output, tracker, f"downloaded {step.repo} to {step.local_dir}")
        case ConvertTorchDist():
            return _execute(command, env, output, tracker, f"converted {step.hf_checkpoint} to {step.save}")
        case Remove():
            for path in step.paths:
                _remove(Path(path))
            return "ran", "removed " + ", ".join(step.paths)
        case Conversion():
            return _execute(command, env, output, tracker, f"converted {step.model_dir} to {step.save_dir}")
        case Call():
            return _call(step, command, env, output, tracker)


def _call(
    step: Call, command: Command, env: Mapping[str, str], output: Output, tracker: Tracker
) -> tuple[StepStatus, str]:
    """A test's own function, once each ``${NAME}`` of its arguments is set where it runs."""
    for name in shell.references(json.dumps(step.args)):  # the program fills them from its env
        fill(f"${{{name}}}", env, f"prepare step {command.name}'s args")
    return _execute(command, env, output, tracker, f"called {step.call}", step.call)


def _returning(
    step: Call, command: Command, env: Mapping[str, str], output: Output, tracker: Tracker
) -> tuple[StepStatus, str, str | None]:
    """A call whose result flags take: its program writes what the function returned (once it checked
    it is one line of text) to the file its last word names, here one of a fresh folder, read back
    here; the folder goes with it."""
    with tempfile.TemporaryDirectory(prefix="run-matrix-prepared-") as folder:
        path = Path(folder) / "result"
        given = replace(command, argv=(*command.argv[:-1], str(path)))
        status, detail = _call(step, given, env, output, tracker)
        if status != "ran":
            return status, detail, None
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not text:  # the function ended the process itself (os._exit) before the program could write
        return (
            "failed",
            f"{step.call} ended without run-matrix's program writing its result (it exited?)",
            None,
        )
    return "ran", f"called {step.call}; it returned {text}", text


def _remove(path: Path) -> None:
    """``rm -rf PATH``: a link goes, never what it points to; a path that is not there is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _execute(
    command: Command, env: Mapping[str, str], output: Output, tracker: Tracker, done: str, called: str = ""
) -> tuple[StepStatus, str]:
    """Run a rendered command in its own session (from its ``cwd``, if it has one), its output line by
    line to ``output``; an interrupt (or an output that cannot be written) stops its whole session. A
    function ``called`` that fails is quoted by its output's last line (a traceback's error)."""
    where = f"prepare step {command.name}"
    argv = [fill(token, env, where) for token in command.argv]
    cwd = fill(command.cwd, env, where) or None
    own = {name: fill(value, env, where) for name, value in command.env.items()}  # as the shell form does
    full_env = {**os.environ, **env, **own, processes.RUN_ID_VARIABLE: tracker.run_id}
    with processes.deferred_interrupt():  # started and recorded, or neither
        try:
            process = subprocess.Popen(
                argv,
                env=full_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                start_new_session=True,
                cwd=cwd,
            )
        except FileNotFoundError as exc:
            if cwd is not None and exc.filename == cwd:
                return "failed", f"cannot run it from {cwd}: no such folder"
            return "failed", f"{argv[0]} is not installed (not on PATH)"
        tracker.started("prepare", process)
    assert process.stdout is not None
    last = ""
    try:
        for line in process.stdout:
            output(line.rstrip("\n"))
            last = line.strip() or last
        code = process.wait()
    finally:
        with processes.deferred_interrupt():
            processes.stop_session(process, STOP_GRACE_SECONDS)  # what it left behind, too
            process.stdout.close()
            tracker.stopped(process.pid)
    if code != 0 and called:
        said = last if len(last) <= QUOTED else last[:QUOTED] + "…"
        return "failed", f"{called} failed (exit code {code}): {said or 'it printed nothing'}"
    if code != 0:
        return "failed", f"{argv[0]} exited with code {code} (the log has its output)"
    return "ran", done
