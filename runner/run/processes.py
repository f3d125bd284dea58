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
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    _wait_empty(process, grace)
    left = _alive(leader)
    for pid in left:
        _kill(pid, lambda p: os.kill(p, signal.SIGKILL))
    if not _HAVE_PROC:  # without /proc, the leader's process group is what we can reach
        _kill(leader, lambda p: os.killpg(p, signal.SIGKILL))
    if process.poll() is None:
        process.kill()
    process.wait()
    _wait_empty(process, 5.0)  # SIGKILL is delivered, not awaited
    return left


def _wait_empty(process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (process.poll() is None or _alive(process.pid)):
        time.sleep(0.1)


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


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Finish a clean-up before a Ctrl-C takes effect: a second Ctrl-C while a Ray head or a job
    is being stopped would otherwise leave it running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, a `kill`) stops the run as Ctrl-C does: jobs and heads are
    stopped and the reports written, instead of Python exiting on the spot."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
