"""cleanup: stop what runs that died left running — from their records, never by name.

A run is dead when its record's lock can be taken (``record``). For each dead run: its jobs
on clusters it did not start are stopped through Ray's job API (their processes are the
cluster's, never touched); each process session it started is stopped only as far as it
is proven the run's (``processes.stop_recorded``: the leader's start time and command line,
the run's id in each member's environment), and a local head's temp dir is removed once its
session is empty. What could not be stopped stays in the record for the next try.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner.atomic import write_text
from runner.errors import counted, first_line
from runner.run import processes
from runner.run.record import Job, Record, Session
from runner.spec import documents

STOP_GRACE_SECONDS = 30.0


@dataclass(frozen=True)
class Cleaned:
    """What one dead run had left, and what became of it."""

    run_id: str
    owner_pid: int
    log_dir: str
    stopped: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"run-matrix: run {self.run_id} (pid {self.owner_pid}, logs {self.log_dir}) died and left:"]
        lines += [f"  stopped: {what}" for what in self.stopped]
        lines += [f"  still there: {what}" for what in self.left]
        if len(lines) == 1:
            lines[0] = lines[0].replace("and left:", "and left nothing running")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "pid": self.owner_pid,
            "log_dir": self.log_dir,
            "stopped": self.stopped,
            "left": self.left,
        }


def clean(state: Path, dry_run: bool = False) -> list[Cleaned]:
    """Stop what every dead run recorded under ``state`` left (``dry_run``: only say what)."""
    found = []
    for path, record, lock in _dead_runs(state / "runs"):
        try:
            cleaned = Cleaned(record.run_id, record.owner.pid, record.log_dir)
            if dry_run:
                cleaned.left.extend(_describe_session(s) for s in record.sessions)
                cleaned.left.extend(_describe_job(j) for j in record.jobs)
            else:
                stop_left(record, cleaned)
                _settle(path, record)
            found.append(cleaned)
        finally:
            os.close(lock)
    return found


def _dead_runs(runs: Path) -> Iterator[tuple[Path, Record, int]]:
    """Each record whose run is gone, with its lock held (so that two cleanups never race)."""
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else []:
        try:
            flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # never a link's target, a FIFO
            lock = os.open(path.with_suffix(".lock"), flags)
        except OSError:
            continue  # its run is ending (it removes the record, then the lock)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            record = Record.from_json(documents.json_data(_record_text(path), RECORD_BYTES))
        except (OSError, ValueError, KeyError, TypeError):  # documents.Unreadable is a ValueError
            os.close(lock)  # alive (locked), gone meanwhile, or not a record: not ours to judge
            continue
        if record.owner.still_running():  # a lock on a file system that ignores flock
            os.close(lock)
            continue
        yield path, record, lock


RECORD_BYTES = 1 << 20  # a record names a few sessions and jobs: a few kilobytes


def _record_text(path: Path) -> str:
    """A record's text: a plain file (never through a link, never a FIFO that would block), bounded;
    ValueError for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a plain file")
        raw = stream.read(RECORD_BYTES + 1)
    if len(raw) > RECORD_BYTES:
        raise ValueError(f"{path} is larger than any record")
    return raw.decode("utf-8")


def stop_left(record: Record, cleaned: Cleaned) -> None:
    """Stop what ``record`` still names (a dead run's, or this run's at its very end); strike off
    what was stopped, say in ``cleaned`` what was and what was not."""
    heads = {s.address for s in record.sessions if s.address}
    still: list[Job] = []
    for job in record.jobs:
        error = _stop_job(job)  # on the run's own head too: Ray exits quicker without a job to kill
        if not error:
            cleaned.stopped.append(_describe_job(job))
        elif job.address not in heads:  # a job on a head of the run's stops with that head
            cleaned.left.append(f"{_describe_job(job)}: {error}")
            still.append(job)
    record.jobs = still
    kept: list[Session] = []
    for session in record.sessions:
        stopped, strangers = processes.stop_recorded(session.leader, record.run_id, STOP_GRACE_SECONDS)
        what = _describe_session(session)
        if stopped:
            cleaned.stopped.append(f"{what}: {counted(len(stopped), 'process', 'processes')}")
        if strangers:
            cleaned.left.append(f"{what}: pids {strangers} are in its session but not provably this run's")
            kept.append(session)
            continue
        if session.temp_dir and _removable(Path(session.temp_dir)):
            shutil.rmtree(session.temp_dir, ignore_errors=True)
            cleaned.stopped.append(f"removed {session.temp_dir}")
    record.sessions = kept


def _stop_job(job: Job) -> str:
    """Stop a job through Ray's job API; "" when it is stopped or had ended, else why not."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        return "Ray is not installed here"
    from runner.run.job import stop

    try:
        client = JobSubmissionClient(job.address)
        if client.get_job_status(job.submission_id).is_terminal():
            return ""
    except (OSError, RuntimeError, ValueError) as exc:
        return f"Ray at {job.address} is unreachable ({first_line(exc)}); it may still run"
    return "" if stop(client, job.submission_id) else "Ray did not stop it"


def _removable(temp_dir: Path) -> bool:
    """Only a temp dir run-matrix makes (a record may have been edited by anyone)."""
    return (
        temp_dir.name.startswith("run-matrix-ray-")
        and temp_dir.parent == Path(tempfile.gettempdir())
        and temp_dir.is_dir()
        and not temp_dir.is_symlink()
    )


def _settle(path: Path, record: Record) -> None:
    """Drop the record when nothing is left; else keep what is left for the next cleanup."""
    with contextlib.suppress(OSError):
        if record.sessions or record.jobs:
            write_text(path, json.dumps(record.to_json(), indent=2) + "\n")
        else:
            path.unlink()
            path.with_suffix(".lock").unlink()


def _describe_session(session: Session) -> str:
    if session.kind == "ray-head":
        return f"Ray head (pid {session.leader.pid}, temp dir {session.temp_dir})"
    return f"prepare step (pid {session.leader.pid}: {' '.join(session.leader.cmdline)[:80]})"


def _describe_job(job: Job) -> str:
    return f"job {job.submission_id} on {job.address}"
