"""services: what a cell's launch starts between ``ray start`` and the submission, kept up for the
attempt (miles' ``before_ray_job_submit`` hooks, such as the Mooncake store's master).

A service whose port already answers is left as it is and never stopped, as miles' own hook does;
one started here runs in a process session of its own (recorded, carrying the run's id), its
output in a log beside the cell's, and is stopped with everything it started when the attempt ends.
A hook that reports (``stop:``, or state a verify argument reads) reads its stdin from run-matrix:
``Running.reports`` closes it once the job has ended, and reads the one line the hook then prints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from runner import atomic
from runner.errors import EnvironmentProblem
from runner.launch.command import HOOK_SECONDS, REPORT_SECONDS, SERVICE_SECONDS, Command
from runner.launch.programs import REPORT_BYTES
from runner.redact import Redactor
from runner.run import processes, redacted
from runner.run.record import Tracker
from runner.spec import documents
from runner.spec.runtime.hooks import Reported

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
    redact: Redactor,
) -> Iterator[Running]:
    """Each service up for the body; ``logs`` is the cell log's path, each service's log sits beside it,
    its output passed through ``redact`` on the way."""
    with ExitStack() as stack:
        running = Running([], say)
        for command in commands:
            if command.listens and answers(command.listens):
                say(
                    f"==> {command.name}: skipped: something already answers on 127.0.0.1:{command.listens};"
                    " it is taken to be the service, as miles' hook takes it, and left as it is"
                )
                continue
            log = logs.with_suffix(f".{command.name}.log")
            running.started.append(stack.enter_context(_started(command, env, log, tracker, redact)))
            up = f"answers on 127.0.0.1:{command.listens}" if command.listens else "returned; it stays up"
            say(f"==> {command.name}: {up} (its output: {log})")
        yield running


@dataclass(frozen=True)
class Started:
    """One service or hook this attempt started, with its output since it started."""

    command: Command
    process: subprocess.Popen[bytes]
    output: _Output
    # what a hook that reports is given when asked, and prints in its report line: a line of that text
    # its own code printed (before it was asked, or from its thread) cannot know it
    token: str = dataclasses.field(default_factory=lambda: secrets.token_hex(16))


@dataclass(frozen=True)
class Running:
    """What ``running`` started for the body."""

    started: list[Started]
    say: Callable[[str], None]

    @property
    def reporting(self) -> list[Started]:
        return [each for each in self.started if each.command.report]

    def reports(self, job_succeeded: bool, within: float = REPORT_SECONDS) -> Reported:
        """Each hook that reports, asked to stop once the job has ended (its token written on its stdin,
        which is then closed; all at once,
        then each waited for), as miles' test stops its fault injector in a ``finally``: its state by
        hook name. One that does not report is an EnvironmentProblem naming the hook and what it was
        to report after a job that succeeded (its verify jobs do not run); after one that did not, a
        line of the log (the job's outcome stands)."""
        for each in self.reporting:
            assert each.process.stdin is not None, "a hook that reports reads its stdin from run-matrix"
            with contextlib.suppress(OSError):  # a hook that has died: _report says it exited
                each.process.stdin.write(each.token.encode() + b"\n")
            with contextlib.suppress(OSError):
                each.process.stdin.close()
        found: dict[str, Mapping[str, object]] = {}
        deadline = time.monotonic() + within  # all were asked at once
        for each in self.reporting:
            try:
                found[each.command.name] = _report(each, deadline, within)
            except EnvironmentProblem as exc:
                if job_succeeded:
                    raise
                self.say(f"==> {exc}")
                continue
            said = json.dumps(found[each.command.name])
            self.say(f"==> {each.command.name}: stopped after the job; it reported {said}")
        return found


@contextmanager
def _started(
    command: Command, env: Mapping[str, str], log: Path, tracker: Tracker, redact: Redactor
) -> Iterator[Started]:
    full_env = {**os.environ, **env, processes.RUN_ID_VARIABLE: tracker.run_id}
    out = atomic.open_log(log, append=True)  # a link planted there: EnvironmentProblem
    start = out.seek(
        0, os.SEEK_END
    )  # an earlier attempt's output, its ready line included, is not this one's
    with processes.deferred_interrupt():  # started and recorded, or neither
        try:
            process = subprocess.Popen(
                command.argv,
                stdin=subprocess.PIPE if command.report else None,  # else run-matrix's, as before
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=full_env,
            )
        except FileNotFoundError:
            out.close()
            raise EnvironmentProblem(
                f"{command.name}: {command.argv[0]} is not installed (not on PATH)"
            ) from None
        tracker.started("service", process)
    assert process.stdout is not None
    output = _Output(log, start, redacted.pump(process.stdout, out, redact))
    try:
        _wait(command, process, output)
        yield Started(command, process, _Output(log, start, output.pump))
    finally:
        with processes.deferred_interrupt():
            processes.stop_session(process, STOP_GRACE_SECONDS)
            tracker.stopped(process.pid)
            if process.stdin is not None:
                process.stdin.close()
            output.settle()


def _wait(command: Command, process: subprocess.Popen[bytes], output: _Output) -> None:
    """Until the port answers, or the hook has printed its line, while ours still runs (a port
    another process holds is not ours)."""
    seconds = SERVICE_SECONDS if command.listens else HOOK_SECONDS
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            ended = process.returncode is not None
            how = f"exited ({process.returncode})" if ended else f"{seconds} s passed"
            output.settle(ended)
            tail = output.tail()
            what = f"did not answer on 127.0.0.1:{command.listens}" if command.listens else "did not return"
            raise EnvironmentProblem(
                f"{command.name} {what}: {how}; {output.log} ends with:\n  "
                + "\n  ".join(tail or ["(nothing)"])
            )
        if answers(command.listens) if command.listens else output.first(command.ready.encode(), exact=True):
            return
        time.sleep(0.2)


def _report(each: Started, deadline: float, within: float) -> dict[str, object]:
    """The state one hook reported once asked to stop, read from this attempt's output."""
    command, process, output = each.command, each.process, each.output
    what = f"{command.name}'s {', '.join(command.state)}" if command.state else f"that {command.name} stopped"
    while True:
        ended = process.poll() is not None  # before the last read: a line printed before exit is found
        output.settle(ended)
        wanted = f"{command.report} {each.token} ".encode()
        line = output.first(wanted, exact=False, longest=REPORT_BYTES)
        if line is not None:
            return _state(what, line[len(wanted) :], command.state)
        if ended or time.monotonic() > deadline:
            how = f"{command.name} exited ({process.returncode})" if ended else f"{within:g} s passed"
            tail = "\n  ".join(output.tail() or ["(nothing)"])
            said = f"no report of {what} once asked to stop after the job: {how}"
            raise EnvironmentProblem(f"{said}; {output.log} ends with:\n  {tail}")
        time.sleep(0.2)


def _state(what: str, text: bytes, attributes: Sequence[str]) -> dict[str, object]:
    """The state a report line carries, every attribute asked for in it; EnvironmentProblem saying
    why when it carries none."""
    if len(text) > REPORT_BYTES:
        raise EnvironmentProblem(
            f"the report of {what} is over {REPORT_BYTES} bytes: its values go into a verify job's command"
            " line (report a file's path instead)"
        )
    try:
        report = documents.json_data(text, REPORT_BYTES)
    except ValueError:  # documents.Unreadable
        report = None
    if isinstance(report, dict) and isinstance(report.get("fault"), str):
        raise EnvironmentProblem(f"no report of {what} once asked to stop after the job: {report['fault']}")
    state = report.get("state") if isinstance(report, dict) else None
    if not isinstance(state, dict) or any(name not in state for name in attributes):
        shown = text[:200].decode(errors="replace")
        raise EnvironmentProblem(f"the report of {what} is no report run-matrix's program wrote: {shown}")
    return cast(dict[str, object], state)


TAIL_BYTES = 64 * 1024  # of a log, what a failure quotes its last lines from


class _Output:
    """What a service printed in this attempt (its log past ``start``), read as it grows: memory
    bounded by the longest line looked for, however much it prints and on however long a line."""

    def __init__(self, log: Path, start: int, pump: threading.Thread) -> None:
        self.log, self.start, self.pump = log, start, pump
        self._read = start
        self._line = b""  # the line being read, cut past the longest one looked for

    def first(self, wanted: bytes, exact: bool, longest: int = 0) -> bytes | None:
        """The first whole line printed since the last call that is ``wanted`` (``exact``) or starts
        with it, cut to its first ``len(wanted) + longest + 1`` bytes (so one longer shows)."""
        keep = len(wanted) + longest + 1
        with self.log.open("rb") as out:
            out.seek(self._read)
            while chunk := out.read(TAIL_BYTES):
                self._read += len(chunk)
                *ended, last = chunk.split(b"\n")
                for piece in ended:
                    line, self._line = (self._line + piece)[:keep], b""
                    if line == wanted if exact else line.startswith(wanted):
                        return line
                self._line = (self._line + last)[:keep]
        return None

    def settle(self, ended: bool = True, within: float = 2.0) -> None:
        """Once the process has ended, wait a little for its last lines to reach the log (what it
        started may hold the pipe open: then no longer than ``within``)."""
        if ended:
            self.pump.join(within)

    def tail(self) -> list[str]:
        """The last lines of this attempt's output (at most 5, from its last ``TAIL_BYTES``)."""
        with self.log.open("rb") as out:
            end = out.seek(0, os.SEEK_END)
            out.seek(max(self.start, end - TAIL_BYTES))
            text = out.read().decode(errors="replace")
        return text.strip().splitlines()[-5:]
