"""record: what a run starts, written down as it starts it, so that nothing outlives a run that died.

One JSON file per run in ``<state>/runs/`` (``$RUN_MATRIX_STATE_DIR``, else
``$XDG_STATE_HOME/run-matrix``, else ``~/.local/state/run-matrix``): the run's id, its own
process (pid, start time, command line), its log folder, every process session it started
(a local Ray head with its temp dir, a prepare step) and every job it submitted. Each change
rewrites the file atomically; what is stopped is struck off; a run that ends removes it.

While a run lives it holds an exclusive lock on ``<id>.lock``. The kernel drops the lock
when the run dies, however it dies (SIGKILL, the OOM killer), so the lock — not a pid, which
may be reused — says whether a run is alive. ``cleanup`` stops what dead runs left.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import secrets
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from runner.atomic import write_text
from runner.errors import EnvironmentProblem
from runner.run.processes import Identity

SessionKind = Literal["ray-head", "prepare", "service"]


@dataclass(frozen=True)
class Session:
    """A process session the run started: stopped through its leader, never by name."""

    kind: SessionKind
    leader: Identity
    temp_dir: str | None = None  # a local head's --temp-dir, removed when it is stopped
    address: str | None = None  # a local head's dashboard: its jobs stop with it


@dataclass(frozen=True)
class Job:
    address: str
    submission_id: str


# mutable: what a run started, rewritten (and written to disk) as each session and job ends
@dataclass
class Record:
    run_id: str
    owner: Identity
    log_dir: str
    sessions: list[Session] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        """A record as written by ``to_json``; KeyError/TypeError/ValueError when it is not one."""

        def identity(raw: dict[str, Any]) -> Identity:
            return Identity(int(raw["pid"]), int(raw["start_ticks"]), tuple(str(a) for a in raw["cmdline"]))

        sessions = [
            Session(s["kind"], identity(s["leader"]), s.get("temp_dir"), s.get("address"))
            for s in data["sessions"]
        ]
        jobs = [Job(str(j["address"]), str(j["submission_id"])) for j in data["jobs"]]
        return cls(str(data["run_id"]), identity(data["owner"]), str(data["log_dir"]), sessions, jobs)


class Tracker(Protocol):
    """What the run step tells the record as it starts and stops things."""

    @property
    def run_id(self) -> str: ...
    def started(self, kind: SessionKind, process: subprocess.Popen[Any], **where: str) -> None: ...
    def stopped(self, pid: int) -> None: ...
    def submitted(self, address: str, submission_id: str) -> None: ...
    def ended(self, submission_id: str) -> None: ...


class Untracked:
    """A tracker that records nothing (tests of one step, and `render`-like callers)."""

    run_id = ""

    def started(self, kind: SessionKind, process: subprocess.Popen[Any], **where: str) -> None:
        pass

    def stopped(self, pid: int) -> None:
        pass

    def submitted(self, address: str, submission_id: str) -> None:
        pass

    def ended(self, submission_id: str) -> None:
        pass


def state_dir(env: dict[str, str] | os._Environ[str]) -> Path:
    if env.get("RUN_MATRIX_STATE_DIR"):
        return Path(env["RUN_MATRIX_STATE_DIR"])
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "run-matrix"


def new_run_id() -> str:
    """``20261130-234501-3fa9c1``: sortable by time, unique within a second."""
    return f"{datetime.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


class Ledger:
    """The live record of this run: locked while the run lives, rewritten as things start and stop."""

    def __init__(self, runs: Path, record: Record, lock: int) -> None:
        self.path = runs / f"{record.run_id}.json"
        self.record = record
        self._lock = lock
        self.warning = ""  # the first failed rewrite: the run goes on, the record may be stale

    @classmethod
    def open(cls, state: Path, run_id: str, log_dir: Path) -> Ledger:
        runs = state / "runs"
        try:
            runs.mkdir(parents=True, exist_ok=True)
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            lock = os.open(runs / f"{run_id}.lock", flags, 0o600)
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            owner = Identity.of(os.getpid()) or Identity(os.getpid(), 0, tuple(sys.argv))
            ledger = cls(runs, Record(run_id, owner, str(log_dir.resolve())), lock)
            write_text(ledger.path, ledger.text())
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot record the run in {runs}: {exc.strerror or exc} "
                "(set RUN_MATRIX_STATE_DIR to a writable folder)"
            ) from None
        return ledger

    @property
    def run_id(self) -> str:
        return self.record.run_id

    def text(self) -> str:
        return json.dumps(self.record.to_json(), indent=2) + "\n"

    def started(self, kind: SessionKind, process: subprocess.Popen[Any], **where: str) -> None:
        leader = Identity.of(process.pid) or Identity(process.pid, 0, ())
        self.record.sessions.append(Session(kind, leader, where.get("temp_dir"), where.get("address")))
        self.save()

    def stopped(self, pid: int) -> None:
        self.record.sessions = [s for s in self.record.sessions if s.leader.pid != pid]
        self.save()

    def submitted(self, address: str, submission_id: str) -> None:
        self.record.jobs.append(Job(address, submission_id))
        self.save()

    def ended(self, submission_id: str) -> None:
        self.record.jobs = [j for j in self.record.jobs if j.submission_id != submission_id]
        self.save()

    @property
    def holds_anything(self) -> bool:
        return bool(self.record.sessions or self.record.jobs)

    def close(self) -> None:
        """The run is over: drop the record, unless it still names something left running."""
        if not self.holds_anything:
            with contextlib.suppress(OSError):
                self.path.unlink()
            with contextlib.suppress(OSError):
                (self.path.parent / f"{self.run_id}.lock").unlink()
        os.close(self._lock)  # releases the lock: a later run may now clean up what is left

    def save(self) -> None:
        try:
            write_text(self.path, self.text())
        except OSError as exc:
            self.warning = (
                self.warning or f"could not update the run record {self.path}: {exc.strerror or exc}"
            )
