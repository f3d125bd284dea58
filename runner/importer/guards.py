"""The import sandbox's guards: what a test script may not do, and what it does without effect.

Starting a process, sending a signal, resolving a host or opening a connection refuses the import
(``Refused`` is raised, and the first reason kept). Writing, moving or deleting a file is recorded
and not done: writes go to ``/dev/null``. Environment lookups are recorded, to find the variant
switches a script reads. Loaded by path by ``harness.py``; standard library only.
"""

from __future__ import annotations

import _posixsubprocess
import builtins
import io
import os
import pathlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

Guarded = tuple[tuple[ModuleType, tuple[str, ...]], ...]
WRITE_MODES = set("wax+")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
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


def record_environment_reads(trace: Any) -> None:
    """Every ``os.environ`` lookup (``os.getenv`` and ``get`` included) notes the name and line."""
    environ_class = type(os.environ)

    class Recording(environ_class):  # type: ignore[valid-type, misc]
        def __getitem__(self, key: str) -> str:
            trace.env_reads.setdefault(key, trace.where())
            return str(super().__getitem__(key))

    os.environ.__class__ = Recording


def install(trace: Any) -> None:
    """Refuse what reaches out; record, and do not do, what changes files."""

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
    accessor = getattr(pathlib, "_NormalAccessor", None)
    if accessor is not None:  # Python 3.10's pathlib bound io.open and os.* when it was imported
        accessor.open = staticmethod(recorded_open)
        for name in ("mkdir", "unlink", "rmdir", "rename", "replace", "symlink", "link", "chmod"):
            if hasattr(accessor, name):
                setattr(accessor, name, staticmethod(skip(f"os.{name}")))
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
