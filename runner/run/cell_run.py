"""cell_run: one cell, from its prepare steps through its attempts (cluster, submit, watch, and once
the job succeeded its ``verify:`` jobs) to its checks; the job it submitted is stopped first whatever
ends it early, and the cell says why."""

from __future__ import annotations

import contextlib
import functools
import io
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from runner import atomic
from runner.errors import EnvironmentProblem, display_path
from runner.launch import programs
from runner.launch.planned import Planned
from runner.redact import Redactor
from runner.results.outcome import (
    Attempt,
    CellResult,
    ClusterRecord,
    Gate,
    PrepareRecord,
    ReadRecord,
    RequirementResult,
    Status,
    VerifyRecord,
)
from runner.run import cluster, environment, job, metrics, prepare, processes, reads, services
from runner.run.metrics import Series
from runner.run.plan import Options, job_name, verify_job_id
from runner.run.record import Tracker, Untracked
from runner.run.verdict import verdict
from runner.run.view import View
from runner.spec.runtime import hooks, prepared, run_id

if TYPE_CHECKING:
    from runner.results.history.recorder import Recorder


def cell_result(
    planned: Planned, status: Status, reason: str, requirements: tuple[RequirementResult, ...]
) -> CellResult:
    cell = planned.cell
    chain = tuple(display_path(f) for f in cell.composed.files)
    return CellResult(
        cell.id,
        status,
        reason,
        planned.spec,
        chain,
        cell.profile.name,
        cell.content_hash,
        planned.reproduce,
        requirements=requirements,
    )


class LogLost(Exception):
    """The cell's log cannot be written (disk full, a file size limit): the cell cannot go on."""


# mutable: one cell's run while it goes on (its phase, its attempts, what it read and returned)
@dataclass
class CellRun:
    """One cell, from its prepare steps to its checks."""

    planned: Planned
    requirements: tuple[RequirementResult, ...]
    env: dict[str, str]
    options: Options
    view: View
    redact: Redactor
    tracker: Tracker = field(default_factory=Untracked)
    recorder: Recorder | None = None  # the history store: judges bands, records every attempt
    clusters: list[ClusterRecord] = field(default_factory=list)
    verified: list[VerifyRecord] = field(default_factory=list)
    read: tuple[ReadRecord, ...] = ()  # the values read at launch (of the last attempt)
    results: dict[str, str] = field(default_factory=dict)  # what prepare calls flags take returned, by step
    taken: dict[str, str] = field(default_factory=dict)  # those the launch's flags take, by function
    series: Series = field(default_factory=dict)
    log: TextIO | None = None
    phase: str = "starting"
    stopped_by: str = ""  # what interrupted the cell: Ctrl-C, SIGTERM or SIGHUP
    read_failure: str = ""  # why a value could not be read at launch

    @property
    def id(self) -> str:
        return self.planned.cell.id

    def run(self) -> CellResult:
        started = time.monotonic()
        self.view.started(self.id, tuple(self.planned.cell.spec.expect))
        records: list[PrepareRecord] = []
        attempts: list[Attempt] = []
        ended = ""  # why the cell ended early: an interrupt, a lost log, a fault of run-matrix
        try:
            self.open_log()
            self.prepare(records)
            if not any(r.status == "failed" for r in records):
                self.attempts(attempts)
        except KeyboardInterrupt as exc:
            self.stopped_by = processes.cause_of(exc)
            ended = f"interrupted ({self.stopped_by}) during {self.phase}"
        except LogLost as exc:
            log = display_path(self.log_path)
            ended = f"cannot write the log {log}: {exc}; stopped during {self.phase}"
        except Exception as exc:  # a fault of run-matrix: the cell is reported, what it started stopped
            traceback.print_exc()
            ended = f"run-matrix failed during {self.phase}: {type(exc).__name__}: {exc}"
        finally:
            self._close_log()
        if not self.stopped_by and attempts and attempts[-1].outcome == "interrupted":
            self.stopped_by = attempts[-1].detail.removeprefix("interrupted (").split(")")[0]
        return self.result(tuple(records), attempts, ended, time.monotonic() - started)

    def open_log(self) -> None:
        try:
            self.log = io.TextIOWrapper(atomic.open_log(self.log_path), encoding="utf-8")
        except OSError as exc:
            raise LogLost(_reason(exc)) from None
        except EnvironmentProblem as exc:  # a link planted there
            raise LogLost(str(exc)) from None

    def _close_log(self) -> None:
        if self.log is not None:
            with processes.deferred_interrupt(), contextlib.suppress(OSError):
                self.log.close()  # a full disk fails the flush again; the file keeps what it got
            self.log = None

    def enter(self, phase: str) -> None:
        self.phase = phase
        self.view.phase(self.id, phase)

    @property
    def log_path(self) -> Path:
        return self.options.log_dir / f"{job_name(self.id)}.log"

    def write(self, line: str, read_metrics: bool = True) -> None:
        """A line of the cell's log, redacted; its metrics are read unless it is a verify job's (whose
        output may quote the run's metrics: they are not the run's samples)."""
        line = self.redact(line)
        assert self.log is not None, "write() is called while the cell runs"
        try:
            self.log.write(line + "\n")
            self.log.flush()
        except OSError as exc:
            raise LogLost(_reason(exc)) from None
        self.view.output(self.id, line)
        found = metrics.add(self.series, line) if read_metrics else None
        if found:
            self.view.metrics(self.id, found)

    def prepare(self, records: list[PrepareRecord]) -> None:
        """Run the prepare steps into ``records`` (filled as they go: a Ctrl-C keeps what ran)."""
        for name, step in self.planned.cell.spec.prepare.items():
            if self.options.skip_prepare:
                records.append(PrepareRecord(name, step.kind, "skipped", "--skip-prepare"))
                continue
            self.enter(f"prepare: {name} ({step.kind})")
            self.write(f"==> prepare {name} ({step.kind})")
            command = self.planned.command("prepare", name)
            env = self.options.caller_env
            record = prepare.run_step(name, step, command, env, self.write, self.tracker)
            if record.result is not None:
                self.results[name] = record.result  # the job's flag gets it as returned; the report, redacted
            redacted = record.result and self.redact(record.result)
            record = replace(record, detail=self.redact(record.detail), result=redacted)  # may quote output
            self.write(f"==> prepare {name}: {record.status}: {record.detail}")
            records.append(record)
            if record.status == "failed":
                break

    def attempts(self, attempts: list[Attempt]) -> None:
        retry = self.planned.cell.spec.retry
        for number in range(1, retry.infra + 2):
            if number > 1:
                self.enter(f"retrying in {retry.delay_seconds:g} s ({attempts[-1].detail})")
                time.sleep(retry.delay_seconds)
            self.attempt(number, attempts)
            if attempts[-1].outcome != "infra":
                break

    def attempt(self, number: int, attempts: list[Attempt]) -> None:
        """One attempt, into ``attempts`` however it ends (one cut short is recorded, then re-raised)."""
        started = time.monotonic()
        submission_id = f"{job_name(self.id)}-{uuid.uuid4().hex[:8]}"
        named = run_id.new(attempts[-1].run_id if attempts else "") if self.planned.launch.run_id else ""

        def record(outcome: job.JobOutcome) -> None:
            detail = self.redact(outcome.detail)  # it may quote the job's last line
            seconds = round(time.monotonic() - started, 3)
            argv = run_id.filled(self.planned.entry_argv, named)
            flags = run_id.values(argv, self.planned.launch.run_id) if named else ()
            attempts.append(Attempt(number, submission_id, outcome.outcome, detail, seconds, named, flags))

        self.series.clear()  # an attempt's metrics are its own
        if not self.read_at_launch():
            record(job.JobOutcome("failed", self.read_failure))
            self.write(f"==> attempt {number}: failed: {attempts[-1].detail}")
            return
        where = self.options.ray_address or "a local Ray head"
        self.enter(f"cluster: {where}")
        head_log = self.options.log_dir / f"{job_name(self.id)}.ray-head.log"
        try:
            head = self.planned.command("cluster")
            connected = cluster.connected(self.options.ray_address, head, head_log, self.tracker, self.redact)
            with connected as on:
                self.clusters.append(on.record)
                with services.running(
                    self.planned.services,
                    self.options.caller_env,
                    self.log_path,
                    self.tracker,
                    self.write,
                    self.redact,
                ) as up:
                    outcome = self.submit_and_watch(on, submission_id, number, named)
                    reported = up.reports(outcome.outcome == "succeeded")
                    if outcome.outcome == "succeeded":
                        self.verify(on, submission_id, reported)
        except EnvironmentProblem as exc:
            outcome = job.JobOutcome("infra", str(exc))
        except KeyboardInterrupt as exc:
            cause = processes.cause_of(exc)
            record(job.JobOutcome("interrupted", f"interrupted ({cause}) during {self.phase}"))
            raise
        except BaseException as exc:
            record(job.JobOutcome("stopped", f"stopped by run-matrix: {_reason(exc)}"))
            raise
        record(outcome)
        self.write(f"==> attempt {number} ({submission_id}): {outcome.outcome}: {attempts[-1].detail}")

    def read_at_launch(self) -> bool:
        """The flag values the launch reads from files an earlier cell wrote, and those its prepare calls
        returned; False when one cannot be had."""
        self.read, self.read_failure = (), ""
        launch = self.planned.launch
        if not launch.reads and not launch.prepared:
            return True
        self.enter("read: values at launch")
        try:
            self.taken = reads.returned(launch.prepared, self.results)
            self.read = reads.values(launch.reads)
        except reads.Unreadable as exc:
            self.read_failure = str(exc)
            return False
        for record in self.read:
            self.write(f"==> read {record.flag} {record.value} (from {record.path})")
        for entry in launch.prepared.values():
            flags, returned = ", ".join(entry["flags"]), self.taken[entry["function"]]
            self.write(f"==> prepared {flags}: {returned} (what prepare step {entry['step']} returned)")
        return True

    def submit_and_watch(
        self, on: cluster.Connection, submission_id: str, number: int, named: str
    ) -> job.JobOutcome:
        self.enter(f"submit: {submission_id} on {on.record.address}")
        if named:  # a name of this attempt's own: a retry does not resume from what the failed one saved
            flags = ", ".join(self.planned.launch.run_id)
            self.write(f"==> run-id {flags}: {named} (attempt {number}'s own)")
        self.write(f"==> attempt {number}: job {submission_id} on {on.record.address}")
        argv = prepared.filled(reads.filled(self.planned.entry_argv, self.read), self.taken)
        argv = run_id.filled(argv, named) if named else argv
        return self.job(on, submission_id, environment.entrypoint(argv), self.write)

    def verify(self, on: cluster.Connection, submission_id: str, reported: hooks.Reported) -> None:
        """The spec's ``verify:`` checks, each a job of its own, in order, until one does not pass."""
        for number, command in enumerate(self.planned.verifies, start=1):
            started = time.monotonic()
            check = self.planned.cell.spec.verify[command.name]
            call = check.call  # its arguments that read a hook's state get what the hook reported
            self.enter(f"verify: {command.name}")
            self.write(f"==> verify {command.name}: {call}")
            argv = programs.filled_argv(self.planned.job_argv(command), check.args, reported)
            entrypoint = environment.entrypoint(argv)
            job_id = verify_job_id(submission_id, number, command.name)
            outcome = self.job(on, job_id, entrypoint, functools.partial(self.write, read_metrics=False))
            detail = self.redact(outcome.detail)
            seconds = round(time.monotonic() - started, 3)
            self.verified.append(VerifyRecord(command.name, call, outcome.outcome, detail, seconds))
            self.write(f"==> verify {command.name}: {outcome.outcome}: {detail}")
            if outcome.outcome != "succeeded":
                return

    def job(
        self, on: cluster.Connection, submission_id: str, entrypoint: str, emit: Callable[[str], None]
    ) -> job.JobOutcome:
        """One job on the cluster, its output to ``emit``, watched to its end (``job.run``)."""
        metadata = {"run-matrix-cell": self.id, "content-hash": self.planned.cell.content_hash}
        metadata["run-matrix-run"] = self.tracker.run_id  # the run record that names this job
        timeout = self.options.timeout if self.options.timeout is not None else self.planned.cell.timeout
        submission = job.Submission(self.env, metadata, timeout, self.options.poll_seconds)
        client, address = on.client, on.record.address
        return job.run(client, address, submission_id, entrypoint, submission, self.tracker, emit, self.enter)

    def result(
        self, records: tuple[PrepareRecord, ...], attempts: list[Attempt], ended: str, seconds: float
    ) -> CellResult:
        checks = metrics.check(self.planned.cell.spec.expect, self.series) if attempts else ()
        gates = self.judge(attempts)
        verified = tuple(self.verified)
        status, reason = verdict(records, attempts, checks, ended, self.planned.cell.xfail, gates, verified)
        result = replace(
            cell_result(self.planned, status, reason, self.requirements),
            log=display_path(self.log_path),
            seconds=round(seconds, 3),
            prepare=records,
            attempts=tuple(attempts),
            checks=checks,
            verified=verified,
            reads=self.read,
            metrics={name: tuple(samples) for name, samples in self.series.items()},
            gates=gates,
        )
        if self.recorder is None:
            return result
        try:
            return self.recorder.record(self.planned, result)
        except EnvironmentProblem as error:  # the cell's result stands; the run ends with exit 3
            self.recorder.failed = self.recorder.failed or str(error)
            return result

    def judge(self, attempts: list[Attempt]) -> tuple[Gate, ...]:
        """The bands of ``expect:`` against history, once the job succeeded."""
        if self.recorder is None or not attempts or attempts[-1].outcome != "succeeded":
            return ()
        try:
            return self.recorder.judge(self.planned, self.series)
        except EnvironmentProblem as error:
            self.recorder.failed = self.recorder.failed or str(error)
            return ()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
