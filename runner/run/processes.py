"""Stop only what we started: processes are found by the session run-matrix gave them, never by name.

A process run-matrix starts with ``start_new_session=True`` leads a new session whose id
is its pid; everything it starts stays in that session (Ray's workers set their own
process groups, not their own sessions). So "our processes" is an exact set: those whose
session id is the leader's pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def in_session(leader: int) -> list[int]:
    """The pids of every live process in the session ``leader`` started (Linux: read /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[3]) == leader and fields[0] != "Z":  # fields: state ppid pgrp session ...
            found.append(int(entry.parent.name))
    return found


def stop_session(process: subprocess.Popen[bytes], grace: float) -> list[int]:
    """SIGTERM the session leader, wait ``grace`` seconds for its session to empty, then SIGKILL
    what is left of that session. Returns the pids that had to be killed."""
    leader = process.pid
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (process.poll() is None or _alive(leader)):
        time.sleep(0.1)
    left = _alive(leader)
    for pid in left:
        _kill(pid, lambda p: os.kill(p, signal.SIGKILL))
    if not _HAVE_PROC:  # without /proc, the leader's process group is what we can reach
        _kill(leader, lambda p: os.killpg(p, signal.SIGKILL))
    if process.poll() is None:
        process.kill()
    process.wait()
    return left


_HAVE_PROC = Path("/proc/self/stat").exists()


def _alive(leader: int) -> list[int]:
    if _HAVE_PROC:
        return in_session(leader)
    return [leader] if _kill(leader, lambda p: os.killpg(p, 0)) else []


def _kill(pid: int, how: Callable[[int], None]) -> bool:
    try:
        how(pid)
    except (ProcessLookupError, PermissionError):
        return False
    return True
