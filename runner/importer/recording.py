"""What miles' helpers record into the trace in the import sandbox (``trace.py``), standing in for
them: ``exec_command`` and its per-device variants (the command, never run), the other helpers
``recorder.py`` names (the call), and each ``execute_train`` call (its arguments, the script's
flag-string variables, the function that called it, the thread it would run beside). With a
checkout, its own helper module gets these stand-ins in place of its own (``stand_in_for``).

Loaded by path inside the sandbox, under this module's own name (``recorder.py`` imports it so),
after ``trace.py``. Standard library only.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType
from typing import Any

from runner.importer.trace import TRACE
from runner.importer.trace import Refused as Refused  # the harness's: it reaches the trace through here


def plain(value: Any) -> Any:
    """A value as JSON: dataclasses as mappings, callables by name, the rest as text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if callable(value):
        return {"callable": getattr(value, "__qualname__", repr(value))}
    return str(value)


def arguments(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by name, defaults filled in (a wrong call raises TypeError, as the real one)."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def recording(name: str, signature_of: Callable[..., Any]) -> Callable[..., None]:
    """A helper that records its call (with ``signature_of``'s defaults) and does nothing else."""

    def helper(*args: Any, **kwargs: Any) -> None:
        given = plain(arguments(signature_of, args, kwargs))
        TRACE.record("helper", name=name, args=given)
        if name == "hf_download_dataset":  # miles' `hf download --repo-type dataset` into data_dir
            TRACE.downloads[os.path.abspath(f"{given['data_dir']}/{given['full_name'].split('/')[-1]}")] = (
                given["full_name"]
            )
        elif name == "fp8_cast_bf16":  # a dequantized copy of the checkpoint: the same model
            TRACE.converted(given.get("path_src"), given.get("path_dst"))

    helper.__name__ = helper.__qualname__ = name
    return helper


def command_recorder(name: str) -> Callable[..., str | None]:
    """``exec_command`` and its per-device variants: record the command, run nothing."""

    def run(cmd: str, *args: Any, capture_output: bool = False, **kwargs: Any) -> str | None:
        return TRACE.command(name, cmd, capture_output)

    run.__name__ = run.__qualname__ = name
    return run


def begin_train(call: dict[str, Any]) -> None:
    """An execute_train call starts: what it was given, and the script's flag-string variables."""
    if TRACE.train is not None:
        raise TRACE.refuse("calls execute_train from inside execute_train")
    caller = sys._getframe(2)
    running = next(((what, frames) for thread, what, frames in TRACE.threads if thread.is_alive()), None)
    if running is not None:
        refusal = TRACE.refuse(
            f"launches while a thread of its own runs ({running[0]}): a spec holds launches and the checks"
            " after them, and code that runs alongside the job only as a function of the test's own that"
            " starts it, a launch.before_submit hook"
        )
        if TRACE.beside is not None and TRACE.refusal is not None:  # capture.py tries it as a hook
            TRACE.refusal.update(beside=TRACE.beside(running[1], caller), thread=running[0])
        raise refusal
    hook = call.pop("before_ray_job_submit", None)
    assert TRACE.hook_entry is not None, "the harness installs hooks.py before the script runs"
    call["before_submit"] = [] if hook is None else [TRACE.hook_entry(hook)]
    TRACE.train = TRACE.record(
        "train",
        args=plain(call),
        commands=[],
        variables=_flag_variables(caller),
        caller=_caller(caller),
        flow=id(flow := _script_frame(caller)),
        within=TRACE.functions(caller) if TRACE.functions else [],
    )
    if not any(frame is flow for frame in TRACE.launchers):
        TRACE.launchers.append(flow)  # kept alive, so its id names no other frame
    if TRACE.launching is not None:
        TRACE.launching(flow)


def _script_frame(caller: FrameType) -> FrameType:
    """The launching function of the script: the nearest frame of the script's file that led to the
    launch (``execute()``, also when it launches through a helper of the checkout's), else the caller."""
    frame: FrameType | None = caller
    while frame is not None and frame.f_code.co_filename != TRACE.script:
        frame = frame.f_back
    return frame or caller


def end_train() -> None:
    TRACE.train = None


def _flag_variables(frame: FrameType | None) -> dict[str, str]:
    """Every text variable holding flags, from the caller out to the script's module (nearer wins),
    then those of the functions that returned flag text (``build_train_args(case)``)."""
    found: dict[str, str] = {}
    while frame is not None:
        found |= {name: value for name, value in flag_texts(frame).items() if name not in found}
        if frame.f_code.co_name == "<module>" and frame.f_code.co_filename == TRACE.script:
            break
        frame = frame.f_back
    return found | {name: value for name, value in TRACE.built.items() if name not in found}


def flag_texts(frame: FrameType) -> dict[str, str]:
    return {name: value for name, value in frame.f_locals.items() if isinstance(value, str) and "--" in value}


def builder_returned(frame: FrameType, value: Any) -> None:
    """A function of the test's code returned flag text: its flag variables name the groups."""
    if isinstance(value, str) and "--" in value and TRACE.is_test_code(frame.f_code.co_filename):
        TRACE.built = flag_texts(frame)


def _caller(frame: FrameType) -> dict[str, Any]:
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    return {
        "function": code.co_name,
        "file": code.co_filename,
        "line": frame.f_lineno,
        "parameters": {name: plain(frame.f_locals.get(name)) for name in names},
    }


def stand_in_for(helpers: ModuleType, recorded: Sequence[str], run_id: str) -> None:
    """The checkout's own helper module with the recorders in place: ``exec_command*`` and the helpers
    named in ``recorded`` (``recorder.HELPERS``) run nothing, ``execute_train`` and
    ``get_default_wandb_args`` record as they run, and ``create_run_id`` returns ``run_id``."""
    for name in dir(helpers):
        if name.startswith("exec_command") and callable(getattr(helpers, name)):
            setattr(helpers, name, command_recorder(name))
    for name in recorded:
        if callable(getattr(helpers, name, None)):
            setattr(helpers, name, recording(name, getattr(helpers, name)))
    for name, wrap in (("execute_train", _recorded_train), ("get_default_wandb_args", _recorded_wandb)):
        setattr(helpers, name, wrap(getattr(helpers, name)))
    if callable(getattr(helpers, "create_run_id", None)):
        setattr(helpers, "create_run_id", _fixed_run_id(run_id))  # noqa: B010  (a module of the checkout)


def _fixed_run_id(stand_in: str) -> Callable[[], str]:
    """miles names a run by the clock (``260821-093015-042``): here a stand-in, which the spec's flags
    hold as ``$${run-id}`` (run_ids.py), named anew in each attempt as upstream names each run."""

    def create_run_id() -> str:
        if not any(e["kind"] == "clock" for e in TRACE.events):
            TRACE.record("clock", function="create_run_id")
        return stand_in

    return create_run_id


def _recorded_train(execute_train: Callable[..., None]) -> Callable[..., None]:
    def recorded(*args: Any, **kwargs: Any) -> None:
        begin_train(arguments(execute_train, args, kwargs))
        bound = inspect.signature(execute_train).bind(*args, **kwargs)
        if "before_ray_job_submit" in bound.arguments:  # a hook begin_train named: the spec starts it
            bound.arguments["before_ray_job_submit"] = None
        try:
            execute_train(*bound.args, **bound.kwargs)
        finally:
            end_train()

    return recorded


def _recorded_wandb(get_default_wandb_args: Callable[..., str]) -> Callable[..., str]:
    def recorded(*args: Any, **kwargs: Any) -> str:
        text = get_default_wandb_args(*args, **kwargs)
        if text:
            TRACE.record("wandb", text=text)
        return text

    return recorded
