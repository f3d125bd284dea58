"""The import sandbox's guards: what a test script may not do, and what it does without effect.

Starting a process, sending a signal, resolving a host or opening a connection refuses the import
(``Refused`` is raised, and the first reason kept: ``runner/sandbox/reaching_out.py`` names the
calls), and so does launching while a thread the test's own code started still runs (it would run
beside the job). What is done with files is guarded by ``file_guards.py``, which ``install``
installs too. Environment lookups are recorded, to find the variant switches a script reads. Loaded
by path by ``harness.py``; standard library only.

These guards are what turns an attempt into a refusal that names the script's line; they are not
what makes it harmless. Python has more doors than any list of names (``ctypes``, ``_socket``):
the sandbox around the interpreter (``runner.sandbox``) holds where a guard is walked around.
"""

from __future__ import annotations

import _thread
import os
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

MAX_SHOWN = 160  # characters of a guarded call's command quoted in a refusal (whole words)


def record_environment_reads(trace: Any) -> None:
    """Every ``os.environ`` lookup (``os.getenv`` and ``get`` included) by the code under test notes
    the name and line; a library reading its own settings is not a switch of the test's. A value the
    test's own code sets is recorded: what it starts next inherits it, which a spec does not hold."""
    environ_class = type(os.environ)

    class Recording(environ_class):  # type: ignore[valid-type, misc]
        def __getitem__(self, key: str) -> str:
            reader = trace.own_reader(key)
            if reader is not None:
                trace.env_reads.setdefault(key, reader)
            return str(super().__getitem__(key))

        def __setitem__(self, key: str, value: str) -> None:
            if trace.test_caller() is not None and trace.train is None:  # the test's, not execute_train's
                trace.record("setenv", name=key, value=str(value))
            super().__setitem__(key, value)

    os.environ.__class__ = Recording
    real_putenv = os.putenv

    def putenv(key: Any, value: Any) -> None:  # what it starts inherits it, as with os.environ
        own = sys._getframe(1).f_globals.get("__name__") == "os"  # os.environ's own: recorded above
        if not own and trace.test_caller() is not None and trace.train is None:
            trace.record("setenv", name=key, value=str(value))
        real_putenv(key, value)

    os.putenv = putenv


def install(trace: Any, files: Any, reaching_out: Any) -> None:
    """Refuse what reaches out (``reaching_out``: ``runner/sandbox/reaching_out.py``); record, and do
    not do, what changes files (``files``: the file guards, ``file_guards.py``)."""

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

    reaching_out.refuse(refuse)
    _note_threads(trace)
    files.install(trace, skip)
    time.sleep = lambda seconds: None  # nothing runs, so there is nothing to wait for


def _note_threads(trace: Any) -> None:
    """The threads the test's own code starts, with what each runs and where: one still running
    when execute_train starts would run beside the job (the FT soak tests' fault injector), which
    a spec cannot hold. Libraries' threads are theirs."""
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        caller = trace.test_caller()
        if caller is not None:
            target = getattr(self, "_target", None)
            name = getattr(target, "__qualname__", type(self).__qualname__)
            where = f"{name}, started at {os.path.basename(caller[0])}:{caller[1]}"
            trace.threads.append((self, where, _frames(sys._getframe(1))))
        real_start(self)

    threading.Thread.start = start  # type: ignore[method-assign]
    real_new = _thread.start_new_thread  # threading holds its own reference: this is the test's own call

    def start_new_thread(function: Callable[..., Any], args: tuple[Any, ...], kwargs: Any = None) -> int:
        caller = trace.test_caller()
        if caller is None:
            return real_new(function, args, kwargs or {})
        running = _Running()

        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            finally:
                running.ended = True

        name = getattr(function, "__qualname__", type(function).__qualname__)
        where = f"{name}, started at {os.path.basename(caller[0])}:{caller[1]}"
        trace.threads.append((running, where, _frames(sys._getframe(1))))
        return real_new(run, args, kwargs or {})

    _thread.start_new_thread = _thread.start_new = start_new_thread


def _frames(frame: FrameType | None) -> list[FrameType]:
    """The frames from ``frame`` outward, innermost first (kept: which call started a thread)."""
    found = []
    while frame is not None:
        found.append(frame)
        frame = frame.f_back
    return found


class _Running:
    """A thread started by ``_thread.start_new_thread``, which has no Thread to ask: alive until
    its function returns."""

    ended = False

    def is_alive(self) -> bool:
        return not self.ended


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
    if len(text) <= MAX_SHOWN:
        return text
    words = text.split(" ")
    kept = next(n for n in range(len(words), -1, -1) if len(" ".join(words[:n])) <= MAX_SHOWN)
    return " ".join(words[:kept]) + f" [and {len(words) - kept} more words]"  # whole words: none cut
