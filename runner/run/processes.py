"""Stop only what we started: processes are found by the session run-matrix gave them, never by name.

A process run-matrix starts with ``start_new_session=True`` leads a new session whose id
is its pid; everything it starts stays in that session (Ray's workers set their own
process groups, not their own sessions). So "our processes" is an exact set: those whose
session id is the leader's pid. Linux keeps a pid allocated while it names a live session,
so that number cannot be reused while any member lives.

A session left by a run that died is stopped from its record only after proving it is that
run's: the leader's start time and command line, and the run's id in the environment of every
member, the leader's included (``RUN_MATRIX_RUN_ID``), as a reused pid or a process named in a
forged record would not carry it.

SIGINT, SIGTERM and SIGHUP all interrupt a run the same way (``Interrupted``); a clean-up
defers all three until it is done.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_ID_VARIABLE = "RUN_MATRIX_RUN_ID"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


class Interrupted(KeyboardInterrupt):
    """The run was told to stop: by Ctrl-C (SIGINT), SIGTERM or SIGHUP."""

    def __init__(self, cause: str = "Ctrl-C") -> None:
        super().__init__(cause)
        self.cause = cause


def cause_of(exc: KeyboardInterrupt) -> str:
    """``Ctrl-C``, ``SIGTERM`` or ``SIGHUP``: what interrupted the run."""
    return exc.cause if isinstance(exc, Interrupted) else "Ctrl-C"


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


def stop_session(process: subprocess.Popen[Any], grace: float) -> list[int]:
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


def _wait_empty(process: subprocess.Popen[Any], seconds: float) -> None:
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


class _Deferral:
    """A signal handler that only notes the signals (while a clean-up runs)."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def __call__(self, number: int, frame: object) -> None:
        self.received.append(number)


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Finish a clean-up before an interrupt takes effect: a second Ctrl-C, or a SIGTERM after
    the Ctrl-C, while a Ray head or a job is being stopped would otherwise leave it running.

    After the clean-up the interrupt is raised — unless the clean-up was itself the answer to
    an interrupt (one is being handled): the run is stopping already, and the first cause stands.
    Nested clean-ups defer to the outermost."""
    outer = any(isinstance(signal.getsignal(n), _Deferral) for n in STOP_SIGNALS)
    if outer or threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = isinstance(sys.exc_info()[1], KeyboardInterrupt)
    deferral = _Deferral()
    with _handled_by(deferral):
        yield
    if deferral.received and not stopping:
        raise Interrupted(_NAMES[signal.Signals(deferral.received[0])])


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, a `kill`) and SIGHUP (the terminal closed) stop the run as
    Ctrl-C does: jobs and heads are stopped and the reports written, instead of Python exiting
    on the spot. A signal the caller ignores (``nohup``: SIGHUP) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number: int, frame: object) -> None:
        raise Interrupted(_NAMES[signal.Signals(number)])

    with _handled_by(interrupt):
        yield


@contextmanager
def _handled_by(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for every stop signal the caller does not ignore; the previous handlers after."""
    wanted = [n for n in STOP_SIGNALS if signal.getsignal(n) is not signal.SIG_IGN]
    previous = {n: signal.signal(n, handler) for n in wanted}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


@dataclass(frozen=True)
class Identity:
    """A process as it was when run-matrix started it: a pid alone may since name another."""

    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: clock ticks after boot
    cmdline: tuple[str, ...]

    @classmethod
    def of(cls, pid: int) -> Identity | None:
        """The process with this pid now, or None when there is none (or it cannot be read)."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            return None
        cmdline = tuple(part.decode(errors="replace") for part in raw.split(b"\0") if part)
        return cls(pid, int(fields[19]), cmdline)

    def still_running(self) -> bool:
        return Identity.of(self.pid) == self


def _exiting(pid: int) -> bool:
    """Whether the process is exiting: its memory is gone (no ``VmSize`` in its status), so its
    environment reads empty — as would a live process's started with none, which is no such case."""
    try:
        return "\nVmSize:" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def carries_run_id(pid: int, run_id: str) -> bool:
    """Whether the process's environment holds ``RUN_MATRIX_RUN_ID=<run_id>``."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{RUN_ID_VARIABLE}={run_id}".encode() in environ.split(b"\0")


def stop_recorded(leader: Identity, run_id: str, grace: float) -> tuple[list[int], list[int]]:
    """Stop the session of a process a dead run recorded: SIGTERM the leader if it is still the
    recorded process, then SIGKILL the members that carry the run's id. Returns (the pids
    stopped, the pids of the session left alone because they could not be proven the run's)."""
    # the run's id in the leader's own environment too: its pid, start time and command line are
    # public, and a forged record could name any session leader by them
    leader_ours = leader.still_running() and carries_run_id(leader.pid, run_id)
    members = in_session(leader.pid)
    ours = [p for p in members if (p == leader.pid and leader_ours) or carries_run_id(p, run_id)]
    if not ours:
        return [], sorted(members)
    if leader_ours:  # SIGTERM lets `ray start --block` stop what it started, as it does when we own it
        _kill(leader.pid, lambda p: os.kill(p, signal.SIGTERM))
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and leader.still_running():
            time.sleep(0.1)
    # SIGKILL, round after round: a member Ray forks while its head stops carries the run's id too,
    # and one that is exiting (its environment already gone) is waited for, never called a stranger
    stopped = set(ours)
    deadline = time.monotonic() + 5.0  # SIGKILL is delivered, not awaited
    while True:
        members = in_session(leader.pid)
        pending = [p for p in members if p in stopped or carries_run_id(p, run_id) or _exiting(p)]
        if not pending or time.monotonic() >= deadline:
            break
        for pid in pending:
            if not _exiting(pid) and _kill(pid, lambda p: os.kill(p, signal.SIGKILL)):
                stopped.add(pid)
        time.sleep(0.1)
    return sorted(stopped), sorted(set(members) - stopped - set(pending))
