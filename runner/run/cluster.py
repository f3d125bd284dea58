"""cluster: a Ray head this run starts and stops, or an existing cluster it only submits to.

A local head is the rendered ``ray start --head ...`` plus ``--block``: it runs in its own
process session, with its own temp dir and free ports, so a cluster already on the
machine is never in the way and never touched. Stopping it is SIGTERM to that ``ray
start`` (Ray then stops what it started), then SIGKILL to whatever of its session is left.
Never ``ray stop``: that stops every Ray of the user. The head carries the run's id in its
environment and is in the run's record from the moment it starts, so a run that dies does
not leave it behind for good (``cleanup``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import atomic
from runner.errors import EnvironmentProblem, first_line
from runner.launch.command import Command
from runner.redact import Redactor
from runner.results.outcome import ClusterRecord
from runner.run import processes, redacted
from runner.run.processes import RUN_ID_VARIABLE
from runner.run.record import Tracker, Untracked

PORTS = (
    "port",
    "dashboard-port",
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "runtime-env-agent-port",
    "ray-client-server-port",
    "metrics-export-port",
    "node-manager-port",
    "object-manager-port",
)
START_SECONDS = 120.0
STOP_GRACE_SECONDS = 30.0


@dataclass(frozen=True)
class Connection:
    record: ClusterRecord
    client: Any  # ray.job_submission.JobSubmissionClient


@dataclass(frozen=True)
class LocalHead:
    process: subprocess.Popen[bytes]
    temp_dir: Path
    address: str  # the dashboard: where jobs are submitted
    pump: threading.Thread | None = None  # what copies its output into its log


@contextmanager
def connected(
    address: str | None,
    head: Command,
    log: Path,
    tracker: Tracker | None = None,
    redact: Redactor | None = None,
) -> Iterator[Connection]:
    """The cluster a cell runs on: ``address``, or a local head started now and stopped after."""
    if address:
        yield Connection(ClusterRecord(address, started=False), client(address))
        return
    tracker = tracker or Untracked()
    started = start_head(head, log, tracker, redact or Redactor())
    try:
        record = ClusterRecord(started.address, started=True, pid=started.process.pid)
        yield Connection(record, client(started.address))
    finally:
        stop_head(started, tracker)


def client(address: str) -> Any:
    from ray.job_submission import JobSubmissionClient

    try:
        return JobSubmissionClient(address)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise EnvironmentProblem(f"Ray at {address} is unreachable: {first_line(exc)}") from None


def head_argv(head: Command, temp_dir: Path, ports: dict[str, int]) -> list[str]:
    """The rendered ``ray start --head ...`` as a blocking process of this Python's Ray."""
    if head.argv[:2] != ("ray", "start"):
        raise AssertionError(f"not a ray start command: {head.argv}")
    own = ["--block", "--temp-dir", str(temp_dir), "--include-dashboard", "true"]
    own += ["--dashboard-host", "127.0.0.1"]
    own += [token for name, port in ports.items() for token in (f"--{name}", str(port))]
    return [sys.executable, "-m", "ray.scripts.scripts", *head.argv[1:], *own]


def start_head(head: Command, log: Path, tracker: Tracker, redact: Redactor) -> LocalHead:
    temp_dir = Path(tempfile.mkdtemp(prefix="run-matrix-ray-"))
    ports = free_ports(len(PORTS))
    argv = head_argv(head, temp_dir, dict(zip(PORTS, ports, strict=True)))
    address = f"http://127.0.0.1:{ports[PORTS.index('dashboard-port')]}"
    env = {**os.environ, RUN_ID_VARIABLE: tracker.run_id}
    with processes.deferred_interrupt():  # started and recorded, or neither
        try:
            out = atomic.open_log(log, append=True)  # never through a link planted there
        except BaseException:
            shutil.rmtree(temp_dir, ignore_errors=True)
            raise
        try:
            process = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        except BaseException:
            out.close()
            shutil.rmtree(temp_dir, ignore_errors=True)
            raise
        tracker.started("ray-head", process, temp_dir=str(temp_dir), address=address)
    assert process.stdout is not None
    pump = redacted.pump(process.stdout, out, redact)  # its output, through the redactor, into its log
    started = LocalHead(process, temp_dir, address, pump)
    try:
        _wait_ready(started, log)
    except BaseException:
        stop_head(started, tracker)
        raise
    return started


def stop_head(head: LocalHead, tracker: Tracker) -> None:
    with processes.deferred_interrupt():
        processes.stop_session(head.process, STOP_GRACE_SECONDS)
        shutil.rmtree(head.temp_dir, ignore_errors=True)
        tracker.stopped(head.process.pid)


def _wait_ready(head: LocalHead, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if head.process.poll() is not None:
            if head.pump is not None:
                head.pump.join(2.0)  # its last lines into the log first
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            raise EnvironmentProblem(
                f"the local Ray head exited ({head.process.returncode}) before it was ready; "
                f"{log} ends with:\n  " + "\n  ".join(tail)
            )
        try:
            with urllib.request.urlopen(f"{head.address}/api/version", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise EnvironmentProblem(f"the local Ray head was not ready after {START_SECONDS:.0f} s; see {log}")


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for each in sockets:
            each.bind(("127.0.0.1", 0))
        return [each.getsockname()[1] for each in sockets]
    finally:
        for each in sockets:
            each.close()
