"""services: what a cell's launch starts between ``ray start`` and the submission, kept up for the
attempt (miles' ``before_ray_job_submit`` hooks, such as the Mooncake store's master).

A service whose port already answers is left as it is and never stopped, as miles' own hook does;
one started here runs in a process session of its own (recorded, carrying the run's id), its
output in a log beside the cell's, and is stopped with everything it started when the attempt ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from runner.command import HOOK_SECONDS, SERVICE_SECONDS, Command
from runner.errors import EnvironmentProblem
from runner.run import processes
from runner.run.record import Tracker

STOP_GRACE_SECONDS = 10.0


def local(address: str) -> bool:
    """A Ray address on this machine, where a service started here is the one the job reaches."""
    host = urllib.parse.urlsplit(address if "://" in address else f"ray://{address}").hostname
    return host in ("127.0.0.1", "localhost", "::1")


def answers(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:PORT."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def running(
    commands: Sequence[Command],
    env: Mapping[str, str],
    logs: Path,
    tracker: Tracker,
    say: Callable[[str], None],
) -> Iterator[None]:
    """Each service up for the body; ``logs`` is the cell log's path, each service's log sits beside it."""
    with ExitStack() as stack:
        for command in commands:
            if command.listens and answers(command.listens):
                say(
                    f"==> {command.name}: skipped: something already answers on 127.0.0.1:{command.listens};"
                    " it is taken to be the service, as miles' hook takes it, and left as it is"
                )
                continue
            log = logs.with_suffix(f".{command.name}.log")
            stack.enter_context(_started(command, env, log, tracker))
            up = f"answers on 127.0.0.1:{command.listens}" if command.listens else "returned; it stays up"
            say(f"==> {command.name}: {up} (its output: {log})")
        yield


@contextmanager
def _started(command: Command, env: Mapping[str, str], log: Path, tracker: Tracker) -> Iterator[None]:
    full_env = {**os.environ, **env, processes.RUN_ID_VARIABLE: tracker.run_id}
    with processes.deferred_interrupt():  # started and recorded, or neither
        try:
            with log.open("ab") as out:
                start = out.tell()  # an earlier attempt's output, its ready line included, is not this one's
                process = subprocess.Popen(
                    command.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=full_env
                )
        except FileNotFoundError:
            raise EnvironmentProblem(
                f"{command.name}: {command.argv[0]} is not installed (not on PATH)"
            ) from None
        tracker.started("service", process)
    try:
        _wait(command, process, _Output(log, start, command.ready.encode()))
        yield
    finally:
        with processes.deferred_interrupt():
            processes.stop_session(process, STOP_GRACE_SECONDS)
            tracker.stopped(process.pid)


def _wait(command: Command, process: subprocess.Popen[bytes], output: _Output) -> None:
    """Until the port answers, or the hook has printed its line, while ours still runs (a port
    another process holds is not ours)."""
    seconds = SERVICE_SECONDS if command.listens else HOOK_SECONDS
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            ended = process.returncode is not None
            how = f"exited ({process.returncode})" if ended else f"{seconds} s passed"
            tail = output.tail()
            what = f"did not answer on 127.0.0.1:{command.listens}" if command.listens else "did not return"
            raise EnvironmentProblem(
                f"{command.name} {what}: {how}; {output.log} ends with:\n  "
                + "\n  ".join(tail or ["(nothing)"])
            )
        if answers(command.listens) if command.listens else output.printed_ready():
            return
        time.sleep(0.2)


TAIL_BYTES = 64 * 1024  # of a log, what a failure quotes its last lines from


class _Output:
    """What a service printed in this attempt (its log past ``start``), read as it grows: memory
    bounded by the ready line's length, however much it prints and on however long a line."""

    def __init__(self, log: Path, start: int, ready: bytes) -> None:
        self.log, self.start, self.ready = log, start, ready
        self._read = start
        self._line: bytes | None = b""  # the line being read; None once it is longer than the ready one

    def printed_ready(self) -> bool:
        with self.log.open("rb") as out:
            out.seek(self._read)
            while chunk := out.read(TAIL_BYTES):
                self._read += len(chunk)
                *ended, last = chunk.split(b"\n")
                for piece in ended:
                    if self._line is not None and self._line + piece == self.ready:
                        return True
                    self._line = b""
                joined = None if self._line is None else self._line + last
                self._line = joined if joined is not None and len(joined) <= len(self.ready) else None
        return False

    def tail(self) -> list[str]:
        """The last lines of this attempt's output (at most 5, from its last ``TAIL_BYTES``)."""
        with self.log.open("rb") as out:
            end = out.seek(0, os.SEEK_END)
            out.seek(max(self.start, end - TAIL_BYTES))
            text = out.read().decode(errors="replace")
        return text.strip().splitlines()[-5:]
