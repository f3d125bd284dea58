"""reaching_out: what code in the sandbox may not do, each call refused where it is made.

Starting a process (``os``/``posix``'s ``system``, ``fork``, ``exec*``, ``spawn*``, ``posix_spawn``,
``subprocess``, ``multiprocessing``), sending a signal, resolving a host or opening a connection:
:func:`refuse` replaces each with what its caller makes of a description (the import's guards raise a
refusal that names the script's line). Binding and listening stay: libraries probe with them at import
(urllib3's IPv6 check among them), and they reach nothing in the sandbox's network namespace, which has
only its own loopback. Python has more doors than any list of names (``ctypes``, ``_socket``): what
holds where one is walked around is the operating system's isolation (``run.py``).

Loaded by path inside the sandbox (``runner/importer/harness.py``); standard library only.
"""

from __future__ import annotations

import _posixsubprocess
import os
import posix
import signal
import socket
import subprocess
from collections.abc import Callable
from types import ModuleType
from typing import Any

Guarded = tuple[tuple[ModuleType, tuple[str, ...]], ...]
PROCESS_NAMES = (
    *("system", "popen", "fork", "forkpty", "kill", "killpg", "posix_spawn", "posix_spawnp", "pidfd_open"),
    *("execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe"),
    *("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"),
)
PROCESSES: Guarded = (
    (os, PROCESS_NAMES),
    (posix, PROCESS_NAMES),
    (signal, ("pidfd_send_signal", "pthread_kill", "raise_signal")),
)
NETWORK = ("connect", "connect_ex", "sendto", "sendmsg")


def refuse(refused: Callable[[str], Callable[..., Any]]) -> None:
    """Processes, signals, connections and host lookups: each becomes ``refused(what it does)``."""
    for module, names in PROCESSES:
        for name in names:
            if hasattr(module, name):
                what = f"starts a process or sends a signal: {module.__name__}.{name}"
                setattr(module, name, refused(what))
    starters: tuple[tuple[object, str, str], ...] = (
        (subprocess.Popen, "_execute_child", "subprocess"),
        (_posixsubprocess, "fork_exec", "multiprocessing"),
    )
    for owner, name, what in starters:
        setattr(owner, name, refused(f"starts a process: {what}"))
    for name in NETWORK:
        setattr(socket.socket, name, refused(f"opens a network connection: socket.{name}"))
    socket.getaddrinfo = refused("looks up a host name: socket.getaddrinfo")
