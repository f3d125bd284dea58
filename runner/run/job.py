"""job: submit through Ray's job submission API, stream the log, stop on timeout or Ctrl-C.

The outcome says whose fault a failure is: ``failed`` (the entrypoint exited non-zero:
the test's) or ``infra`` (Ray could not be reached, or lost the job: its supervisor
died, the runtime env could not be set up). Only ``infra`` may be retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runner.errors import first_line
from runner.results.outcome import AttemptOutcome
from runner.run import processes

if TYPE_CHECKING:
    from runner.run.record import Tracker

INFRA_ERRORS = {
    "RUNTIME_ENV_SETUP_FAILURE",
    "JOB_SUPERVISOR_ACTOR_START_TIMEOUT",
    "JOB_SUPERVISOR_ACTOR_START_FAILURE",
    "JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE",
    "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE",
    "JOB_SUPERVISOR_ACTOR_DIED",
}
UNREACHABLE_SECONDS = 30.0
STOP_SECONDS = 15.0
# Ray can say a job failed before its supervisor has written the driver's last output (the error a
# failure is quoted by) to the log: a failed job's log is read until it stops growing, this long at most
SETTLE_SECONDS = 3.0
SETTLE_POLL = 0.5


@dataclass(frozen=True)
class JobOutcome:
    outcome: AttemptOutcome
    detail: str


@dataclass(frozen=True)
class Submission:
    """What each job of a cell is submitted with, and how it is watched."""

    env: Mapping[str, str]
    metadata: dict[str, str]  # the cell, its content hash, the run record that names the job
    timeout: float | None
    poll: float


def run(
    client: Any,
    address: str,
    submission_id: str,
    entrypoint: str,
    submission: Submission,
    tracker: Tracker,
    emit: Callable[[str], None],
    running: Callable[[str], None],
) -> JobOutcome:
    """One job on the cluster at ``address``, its output to ``emit``, watched to its end (``running``
    is told when it runs); recorded in ``tracker`` before Ray has it, and stopped first whatever cuts
    the watch short."""
    with processes.deferred_interrupt():  # in the record before Ray has it: a crash cannot lose it
        tracker.submitted(address, submission_id)
    try:
        refused = submit(client, submission_id, entrypoint, submission.env, submission.metadata)
        if refused is not None:
            tracker.ended(submission_id)
            return refused
        running(f"running: {submission_id}")
        outcome = watch(client, submission_id, emit, submission.timeout, submission.poll)
    except BaseException:  # an interrupt during the submission, a lost log, a fault of ours
        if stop(client, submission_id):  # Ray may have taken it before
            tracker.ended(submission_id)
        raise
    if outcome.outcome != "infra" or stop(client, submission_id):
        tracker.ended(submission_id)  # ended; an unreachable Ray's job stays recorded
    return outcome


def submit(
    client: Any, submission_id: str, entrypoint: str, env: Mapping[str, str], metadata: dict[str, str]
) -> JobOutcome | None:
    """Submit the job; an outcome only when Ray would not take it (an infrastructure failure)."""
    try:
        client.submit_job(
            entrypoint=entrypoint,
            submission_id=submission_id,
            runtime_env={"env_vars": dict(env)},
            metadata=metadata,
        )
    except (OSError, RuntimeError) as exc:
        return JobOutcome("infra", f"Ray did not take the job: {first_line(exc)}")
    return None


def watch(
    client: Any,
    submission_id: str,
    on_line: Callable[[str], None],
    timeout: float | None,
    poll: float,
) -> JobOutcome:
    """Stream the job's log lines to ``on_line`` until it ends, times out or is interrupted."""
    tail = LogTail(client, submission_id)
    last: deque[str] = deque(maxlen=20)

    def emit(lines: list[str]) -> None:
        for line in lines:
            on_line(line)
            if line.strip():
                last.append(line)

    try:
        ended = _until_terminal(client, submission_id, tail, emit, timeout, poll)
    except KeyboardInterrupt as exc:
        stopped = stop(client, submission_id)
        with processes.deferred_interrupt():
            emit(tail.finish(_logs(client, submission_id)))
        what = "the job was stopped" if stopped else "Ray did not confirm that the job stopped"
        return JobOutcome("interrupted", f"interrupted ({processes.cause_of(exc)}); {what}")
    emit(tail.finish(_settled_logs(client, submission_id) if ended is None else _logs(client, submission_id)))
    if ended is not None:
        return ended
    try:
        return classify(client.get_job_info(submission_id), list(last))
    except (OSError, RuntimeError) as exc:
        return JobOutcome("infra", f"Ray became unreachable: {first_line(exc)}")


def _until_terminal(
    client: Any,
    submission_id: str,
    tail: LogTail,
    emit: Callable[[list[str]], None],
    timeout: float | None,
    poll: float,
) -> JobOutcome | None:
    """Poll until the job is terminal (None), or an outcome that ends the watch early."""
    deadline = None if timeout is None else time.monotonic() + timeout
    unreachable_since: float | None = None
    while True:
        emit(tail.lines(poll))
        if deadline is not None and time.monotonic() > deadline:
            stop(client, submission_id)
            return JobOutcome("timeout", f"timed out after {timeout:g} s; the job was stopped")
        try:
            status = client.get_job_status(submission_id)
        except (OSError, RuntimeError) as exc:
            unreachable_since = unreachable_since or time.monotonic()
            if time.monotonic() - unreachable_since > UNREACHABLE_SECONDS:
                return JobOutcome("infra", f"Ray became unreachable: {first_line(exc)}")
            continue
        unreachable_since = None
        if status.is_terminal():
            return None


def classify(info: Any, last_lines: list[str]) -> JobOutcome:
    status = str(info.status.value)
    if status == "SUCCEEDED":
        return JobOutcome("succeeded", "the job succeeded")
    if status == "STOPPED":
        return JobOutcome("failed", "the job was stopped (not by run-matrix)")
    error = getattr(info, "error_type", None)  # older Rays have none: every failure is the test's
    error_type = str(getattr(error, "value", error or ""))  # an enum in JobInfo, text from the client
    if error_type in INFRA_ERRORS:
        return JobOutcome("infra", f"Ray lost the job ({error_type}): {first_line(info.message or '')}")
    code = getattr(info, "driver_exit_code", None)
    last = _logged_last(info.message or "") or (last_lines[-1].strip() if last_lines else "")
    said = f": {last}" if last else ""
    return JobOutcome("failed", f"the job exited with code {code}{said}")


LOGS_SAID = "last available logs (truncated to 20,000 chars):"  # how Ray's job message quotes them


def _logged_last(message: str) -> str:
    """The last line of the log a failed job's message quotes (Ray's supervisor reads it once the
    driver has exited: later than the log the watch read may be); "" when it quotes none."""
    _, found, logs = message.partition(LOGS_SAID)
    lines = [line.strip() for line in logs.splitlines() if line.strip()] if found else []
    return lines[-1] if lines else ""


def stop(client: Any, submission_id: str) -> bool:
    """Stop the job and wait (``STOP_SECONDS`` at most) until Ray says it ended: whether it did."""
    with processes.deferred_interrupt(), contextlib.suppress(OSError, RuntimeError):
        client.stop_job(submission_id)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            if client.get_job_status(submission_id).is_terminal():
                return True
            time.sleep(0.2)
    return False


def _settled_logs(client: Any, submission_id: str) -> str | None:
    """The whole log of a job that ended: of one that did not succeed, once two reads
    ``SETTLE_POLL`` apart agree (a read that fails is tried again; ``SETTLE_SECONDS`` at most)."""
    logs = _logs(client, submission_id)
    with contextlib.suppress(OSError, RuntimeError):
        if str(client.get_job_status(submission_id).value) == "SUCCEEDED":
            return logs
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        time.sleep(SETTLE_POLL)
        again = _logs(client, submission_id)
        if again is not None and again == logs:
            break
        logs = again if again is not None else logs
    return logs


def _logs(client: Any, submission_id: str) -> str | None:
    try:
        logs: str = client.get_job_logs(submission_id)
    except (OSError, RuntimeError):
        return None
    return logs


class LogTail:
    """The job's log as it grows: Ray's websocket tail in a daemon thread, read as whole lines.

    The tail can lag behind the job's end; ``finish`` adds what the full log has beyond it.
    """

    def __init__(self, client: Any, submission_id: str) -> None:
        logging.getLogger("ray.dashboard.modules.job.sdk").setLevel(logging.WARNING)  # "WebSocket closed"
        self._chunks: queue.Queue[str | None] = queue.Queue()
        self._received = 0
        self._partial = ""
        self._thread = threading.Thread(
            target=self._follow, args=(client, submission_id), daemon=True, name=f"tail {submission_id}"
        )
        self._thread.start()

    def _follow(self, client: Any, submission_id: str) -> None:
        async def consume() -> None:
            async for chunk in client.tail_job_logs(submission_id):
                self._chunks.put(chunk)

        try:
            asyncio.run(consume())
        except Exception:  # the watch polls the status itself; finish() fills any gap
            pass
        finally:
            self._chunks.put(None)

    def lines(self, wait: float) -> list[str]:
        """The complete lines that arrived, waiting up to ``wait`` seconds for the first."""
        chunks = []
        with contextlib.suppress(queue.Empty):
            chunks.append(self._chunks.get(timeout=wait))
            while True:
                chunks.append(self._chunks.get_nowait())
        return self._split("".join(c for c in chunks if c))

    def finish(self, full_log: str | None) -> list[str]:
        """The lines not yet read, the last one even without its newline."""
        lines = self.lines(0)
        if full_log is not None and len(full_log) > self._received:
            lines += self._split(full_log[self._received :])
        if self._partial:
            lines.append(self._partial)
            self._partial = ""
        return lines

    def _split(self, text: str) -> list[str]:
        self._received += len(text)
        *complete, self._partial = (self._partial + text).split("\n")
        return complete
