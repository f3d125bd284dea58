"""The import sandbox: runs one miles test script with nothing executed, downloaded or started.

``python -I -B harness.py SCRIPT RESULT [MILES_ROOT]`` — a fresh interpreter, started by
``capture.py``. Before the script runs:

* miles' command helpers are replaced: without ``MILES_ROOT`` the whole helper module is
  ``recorder.py`` (recording into ``trace.py``); with it, miles' own module is loaded from the
  checkout and its process-running helpers (``exec_command*``, conversions, downloads) are
  swapped for recorders with the same signatures, and ``execute_train`` runs with its commands
  recorded;
* everything else that could reach out is guarded: starting a process, sending a signal or
  opening a network connection refuses the import; writing, moving or deleting a file is
  recorded and not done (writes go to ``/dev/null``);
* reads of environment variables are recorded (the variant switches are found that way), and so
  are functions of the script that ``prepare()`` calls which use no helper and touch no file
  (their effect is invisible to the recorder).

The trace goes to RESULT as JSON. Standard library only: this file runs outside run-matrix.
"""

from __future__ import annotations

import _posixsubprocess
import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import runpy
import shutil
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

HELPERS_MODULE = "miles.utils.external_utils.command_utils"
HERE = Path(__file__).resolve().parent
WRITE_MODES = set("wax+")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
Guarded = tuple[tuple[ModuleType, tuple[str, ...]], ...]
FILE_CHANGES: Guarded = (
    (
        os,
        ("remove", "unlink", "rmdir", "mkdir", "makedirs", "rename", "renames", "replace", "symlink", "link"),
    ),
    (os, ("chmod", "chown", "truncate", "utime")),
    (shutil, ("rmtree", "move", "copytree", "copy", "copy2", "copyfile")),
)
PROCESSES: Guarded = (
    (os, ("system", "popen", "fork", "forkpty", "kill", "killpg", "posix_spawn", "posix_spawnp")),
    (os, ("execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe")),
    (os, ("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe")),
)
# Stand-ins for the packages a miles test imports besides the helpers (CI registration only).
STUB_PACKAGES = ("miles", "miles.utils", "miles.utils.external_utils", "tests", "tests.ci")
STUB_MODULES = ("tests.ci.ci_register", "tests.ci.metric_history")


def main(argv: Sequence[str]) -> int:
    script, result = Path(argv[0]).resolve(), Path(argv[1])
    miles_root = Path(argv[2]).resolve() if len(argv) > 2 else None
    with result.open("w", encoding="utf-8") as out:  # opened before any guard is in place
        tracing = _load("runner.importer.trace", "trace.py")  # its own name: recorder.py imports it so
        recorder = _load("_run_matrix_recorder", "recorder.py")
        trace = tracing.TRACE
        trace.script = str(script)
        trace.own_files |= {str(HERE / name) for name in ("harness.py", "trace.py", "recorder.py")}
        _record_environment_reads(trace)
        _guard(trace)
        failure = _run(script, miles_root, recorder, tracing)
        data = {"events": trace.events, "env_reads": trace.env_reads, "refusal": trace.refusal}
        json.dump({**data, "failure": failure, "root": str(miles_root or recorder.ROOT)}, out)
    return 0


def _load(name: str, file: str) -> Any:
    """A sibling file as module ``name`` (registered: dataclasses and imports look modules up by name)."""
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run(script: Path, miles_root: Path | None, recorder: Any, tracing: Any) -> dict[str, Any] | None:
    """Run the script as ``python SCRIPT`` would; the reason it stopped early, if it did."""
    trace = tracing.TRACE
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    try:
        if miles_root is None:
            sys.meta_path.insert(0, _StandIns(recorder, trace))
        else:
            _use_checkout(miles_root, recorder, tracing)
    except BaseException as error:
        reason = f"cannot load miles' helpers from {miles_root}: {type(error).__name__}: {error}"
        return {"reason": reason, "at": [str(miles_root), None], "environment": True}
    try:
        sys.setprofile(_silent_prepare_code(trace))
        runpy.run_path(str(script), run_name="__main__")
    except tracing.Refused:
        return None  # trace.refusal says why
    except SystemExit as stop:
        if stop.code not in (None, 0):
            return {"reason": f"exits with status {stop.code!r}", "at": _last_line(stop, trace)}
    except BaseException as error:  # the script's own failure, reported with its line
        return {"reason": f"raises {type(error).__name__}: {error}", "at": _last_line(error, trace)}
    finally:
        sys.setprofile(None)
    return None


def _last_line(error: BaseException, trace: Any) -> list[Any]:
    """The deepest line of the script (else of any file) in the error's traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if f.filename == trace.script] or [
        f for f in frames if "importlib" not in f.filename
    ]
    last = (own or frames)[-1] if frames else None
    return [last.filename, last.lineno] if last else [trace.script, None]


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The helper module is the recorder; CI registration modules accept any call; any other
    module of miles needs the real checkout."""

    def __init__(self, recorder: ModuleType, trace: Any) -> None:
        self.recorder = recorder
        self.trace = trace

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == HELPERS_MODULE or name in STUB_PACKAGES or name in STUB_MODULES:
            return importlib.machinery.ModuleSpec(name, self, is_package=name in STUB_PACKAGES)
        if name.startswith(("miles.", "tests.ci.")):
            raise self.trace.refuse(
                f"imports {name}, which needs miles itself: import with --miles-root DIR (a miles checkout)"
            )
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.recorder if spec.name == HELPERS_MODULE else None

    def exec_module(self, module: ModuleType) -> None:
        if module.__name__ in STUB_MODULES:
            setattr(module, "__getattr__", _accept_anything)  # noqa: B010  (a module-level __getattr__)
        elif module.__name__ in STUB_PACKAGES:
            module.__path__ = []


def _accept_anything(name: str) -> Callable[..., None]:
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda *args, **kwargs: None


def _use_checkout(root: Path, recorder: Any, tracing: Any) -> None:
    """miles' own helper module, its command-running helpers replaced by recorders."""
    sys.path.insert(0, str(root))
    real = importlib.import_module(HELPERS_MODULE)
    tracing.TRACE.own_files.add(str(Path(real.__file__ or "").resolve()))
    for name in dir(real):
        if name.startswith("exec_command") and callable(getattr(real, name)):
            setattr(real, name, tracing.command_recorder(name))
    for name in recorder.HELPERS:
        if callable(getattr(real, name, None)):
            setattr(real, name, tracing.recording(name, getattr(real, name)))
    for name, wrap in (("execute_train", _recorded_train), ("get_default_wandb_args", _recorded_wandb)):
        setattr(real, name, wrap(getattr(real, name), tracing))


def _recorded_train(execute_train: Callable[..., None], tracing: Any) -> Callable[..., None]:
    def recorded(*args: Any, **kwargs: Any) -> None:
        tracing.begin_train(tracing.arguments(execute_train, args, kwargs))
        try:
            execute_train(*args, **kwargs)
        finally:
            tracing.end_train()

    return recorded


def _recorded_wandb(get_default_wandb_args: Callable[..., str], tracing: Any) -> Callable[..., str]:
    def recorded(*args: Any, **kwargs: Any) -> str:
        text = get_default_wandb_args(*args, **kwargs)
        if text:
            tracing.TRACE.record("wandb", text=text)
        return text

    return recorded


def _record_environment_reads(trace: Any) -> None:
    """Every ``os.environ`` lookup (``os.getenv`` and ``get`` included) notes the name and line."""
    environ_class = type(os.environ)

    class Recording(environ_class):  # type: ignore[valid-type, misc]
        def __getitem__(self, key: str) -> str:
            trace.env_reads.setdefault(key, trace.where())
            return str(super().__getitem__(key))

    os.environ.__class__ = Recording


def _guard(trace: Any) -> None:
    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise trace.refuse(
                f"{what} ({_show(args, port=True)}), outside miles' helpers: nothing may run here"
            )

        return refused

    def skip(what: str) -> Callable[..., None]:
        def recorded(*args: Any, **kwargs: Any) -> None:
            trace.record("effect", what=f"{what} {_show(args)}")

        return recorded

    for module, names in PROCESSES:
        for name in names:
            if hasattr(module, name):
                setattr(module, name, refuse(f"starts a process or sends a signal: os.{name}"))
    starters: tuple[tuple[object, str, str], ...] = (
        (subprocess.Popen, "_execute_child", "subprocess"),
        (_posixsubprocess, "fork_exec", "multiprocessing"),
    )
    for owner, name, what in starters:
        setattr(owner, name, refuse(f"starts a process: {what}"))
    for name in ("connect", "connect_ex", "sendto"):
        setattr(socket.socket, name, refuse(f"opens a network connection: socket.{name}"))
    socket.getaddrinfo = refuse("looks up a host name: socket.getaddrinfo")
    for module, names in FILE_CHANGES:
        for name in names:
            setattr(module, name, skip(f"{module.__name__}.{name}"))
    recorded_open = _recorded_open(trace, io.open)
    builtins.open = recorded_open
    io.open = recorded_open
    os.open = _recorded_os_open(trace, os.open)
    time.sleep = lambda seconds: None  # nothing runs, so there is nothing to wait for


def _recorded_open(trace: Any, real_open: Callable[..., Any]) -> Callable[..., Any]:
    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if WRITE_MODES & set(mode) and not isinstance(file, int):
            trace.record("effect", what=f"writes {file}")
            return real_open(os.devnull, mode.replace("x", "w"), *args, **kwargs)
        return real_open(file, mode, *args, **kwargs)

    return open_


def _recorded_os_open(trace: Any, real_open: Callable[..., int]) -> Callable[..., int]:
    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITE_FLAGS:
            trace.record("effect", what=f"writes {path}")
            return real_open(os.devnull, flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC))
        return real_open(path, flags, *args, **kwargs)

    return open_


def _silent_prepare_code(trace: Any) -> Callable[[FrameType, str, Any], None]:
    """Note each function of the script that ``prepare()`` calls and that records nothing."""
    running: dict[int, tuple[str, int, int]] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code.co_filename != trace.script:
            return
        caller = frame.f_back
        if (
            event == "call"
            and caller
            and caller.f_code.co_name == "prepare"
            and caller.f_code.co_filename == trace.script
        ):
            running[id(frame)] = (code.co_name, code.co_firstlineno, len(trace.events))
        elif event == "return" and id(frame) in running:
            name, line, before = running.pop(id(frame))
            if len(trace.events) == before:
                trace.events.append({"kind": "silent", "function": name, "at": [trace.script, line]})

    return profile


def _show(args: tuple[Any, ...], port: bool = False) -> str:
    """What a guarded call was asked to do: its first plain argument (a command, a path, a host[, port])."""
    at = next(
        (i for i, a in enumerate(args) if isinstance(a, (str, bytes, os.PathLike, list, tuple)) and a), None
    )
    if at is None:
        return ""
    first, after = args[at], args[at + 1 : at + 2]
    text = " ".join(map(str, first)) if isinstance(first, (list, tuple)) else str(first)
    if port and after and isinstance(after[0], int) and not isinstance(after[0], bool):
        text += f" {after[0]}"
    return text if len(text) <= 160 else text[:157] + "..."


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
