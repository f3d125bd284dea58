"""session: run the planned cells one after another, and say what happened to each.

``run`` is the whole run step: requirements -> preflight -> the job env of every cell
(probes, secrets) -> for each cell: prepare -> attempts (cluster, submit, watch; an
infrastructure failure is retried as the spec's ``retry`` allows) -> metric checks.
A Ctrl-C stops the job it interrupts and ends the run; the cells so far are reported.
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from runner.errors import EnvironmentProblem, display_path
from runner.run import cluster, environment, job, metrics, preflight, prepare, requires
from runner.run.metrics import Series
from runner.run.plan import Options, Planned, job_name
from runner.run.results import (
    Attempt,
    CellResult,
    Check,
    ClusterRecord,
    Gate,
    PrepareRecord,
    RequirementResult,
    RunResult,
    Status,
)
from runner.run.view import View

if TYPE_CHECKING:
    from runner.history.recorder import Recorder


def run(
    planned: Sequence[Planned], options: Options, view: View, recorder: Recorder | None = None
) -> RunResult:
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    if options.preflight and planned:
        preflight.need_checkout(options)
    checked = {p.cell.id: requires.check(p.cell, options.miles_root, options.caller_env) for p in planned}
    skips = {p.cell.id: _skip_reason(p, checked[p.cell.id]) for p in planned}
    runnable = [p for p in planned if not skips[p.cell.id]]
    if options.preflight and runnable:
        preflight.check(runnable, options)
    redact = environment.Redactor.of(_secrets(planned), options.caller_env)
    envs = {p.cell.id: _job_env(p, options) for p in runnable}
    results: list[CellResult] = []
    clusters: list[ClusterRecord] = []
    not_run = ""
    for each in planned:
        if not_run or skips[each.cell.id]:
            reason = not_run or skips[each.cell.id]
            result = _result(each, Status.SKIPPED, reason, checked[each.cell.id])
        else:
            cell_run = CellRun(
                each, checked[each.cell.id], envs[each.cell.id], options, view, redact, recorder
            )
            result = cell_run.run()
            clusters += cell_run.clusters
        view.finished(result)
        results.append(result)
        if result.status is Status.INTERRUPTED:
            not_run = "not run: the run was interrupted"
        elif result.status in (Status.FAILED, Status.ERROR) and not options.keep_going:
            not_run = f"not run: {each.cell.id} failed (--keep-going runs the rest)"
    seconds = time.monotonic() - started
    return RunResult(tuple(results), started_at, seconds, tuple(clusters), options.strict)


def _skip_reason(planned: Planned, checked: tuple[RequirementResult, ...]) -> str:
    """Why the cell is not run (its matrix skips it, or a requirement is unmet), or ""."""
    skip = planned.cell.skip
    if skip is not None:
        return f"skip: {skip.reason}" + (f" ({skip.issue})" if skip.issue else "")
    return "; ".join(r.describe() for r in requires.unmet(checked))


def _secrets(planned: Sequence[Planned]) -> list[str]:
    return sorted({name for p in planned for name in p.cell.conventions.secrets})


def _job_env(planned: Planned, options: Options) -> dict[str, str]:
    probed = environment.probe(planned.launch.probes, options.caller_env)
    return environment.job_env(planned, probed, options.caller_env)


def _result(
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


@dataclass
class CellRun:
    """One cell, from its prepare steps to its checks."""

    planned: Planned
    requirements: tuple[RequirementResult, ...]
    env: dict[str, str]
    options: Options
    view: View
    redact: environment.Redactor
    recorder: Recorder | None = None  # the history store: judges bands, records every attempt
    clusters: list[ClusterRecord] = field(default_factory=list)
    series: Series = field(default_factory=dict)
    log: TextIO | None = None
    phase: str = "starting"

    @property
    def id(self) -> str:
        return self.planned.cell.id

    def run(self) -> CellResult:
        started = time.monotonic()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.view.started(self.id, tuple(self.planned.cell.spec.expect))
        records: list[PrepareRecord] = []
        attempts: list[Attempt] = []
        interrupted = ""
        with self.log_path.open("w", encoding="utf-8") as self.log:
            try:
                self.prepare(records)
                if not any(r.status == "failed" for r in records):
                    self.attempts(attempts)
            except KeyboardInterrupt:
                interrupted = f"interrupted (Ctrl-C) during {self.phase}"
        return self.result(tuple(records), attempts, interrupted, time.monotonic() - started)

    def enter(self, phase: str) -> None:
        self.phase = phase
        self.view.phase(self.id, phase)

    @property
    def log_path(self) -> Path:
        return self.options.log_dir / f"{job_name(self.id)}.log"

    def write(self, line: str) -> None:
        line = self.redact(line)
        assert self.log is not None, "write() is called while the cell runs"
        self.log.write(line + "\n")
        self.log.flush()
        self.view.output(self.id, line)
        found = metrics.add(self.series, line)
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
            record = prepare.run_step(name, step, command, self.options.caller_env, self.write)
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
            attempts.append(self.attempt(number))
            if attempts[-1].outcome != "infra":
                break

    def attempt(self, number: int) -> Attempt:
        started = time.monotonic()
        submission_id = f"{job_name(self.id)}-{uuid.uuid4().hex[:8]}"
        self.series.clear()  # an attempt's metrics are its own
        where = self.options.ray_address or "a local Ray head"
        self.enter(f"cluster: {where}")
        head_log = self.options.log_dir / f"{job_name(self.id)}.ray-head.log"
        try:
            with cluster.connected(self.options.ray_address, self.planned.command("cluster"), head_log) as on:
                self.clusters.append(on.record)
                outcome = self.submit_and_watch(on, submission_id, number)
        except EnvironmentProblem as exc:
            outcome = job.JobOutcome("infra", str(exc))
        detail = self.redact(outcome.detail)  # it may quote the job's last line
        self.write(f"==> attempt {number} ({submission_id}): {outcome.outcome}: {detail}")
        seconds = round(time.monotonic() - started, 3)
        return Attempt(number, submission_id, outcome.outcome, detail, seconds)

    def submit_and_watch(self, on: cluster.Connection, submission_id: str, number: int) -> job.JobOutcome:
        self.enter(f"submit: {submission_id} on {on.record.address}")
        self.write(f"==> attempt {number}: job {submission_id} on {on.record.address}")
        entrypoint = environment.entrypoint(self.planned)
        metadata = {"run-matrix-cell": self.id, "content-hash": self.planned.cell.content_hash}
        try:
            refused = job.submit(on.client, submission_id, entrypoint, self.env, metadata)
        except KeyboardInterrupt:
            job.stop(on.client, submission_id)  # Ray may have taken it before the Ctrl-C
            raise
        if refused is not None:
            return refused
        self.enter(f"running: {submission_id}")
        timeout = self.options.timeout if self.options.timeout is not None else self.planned.cell.timeout
        return job.watch(on.client, submission_id, self.write, timeout, self.options.poll_seconds)

    def result(
        self, records: tuple[PrepareRecord, ...], attempts: list[Attempt], interrupted: str, seconds: float
    ) -> CellResult:
        checks = metrics.check(self.planned.cell.spec.expect, self.series) if attempts else ()
        gates = self.judge(attempts)
        status, reason = verdict(records, attempts, checks, interrupted, self.planned.cell.xfail, gates)
        result = replace(
            _result(self.planned, status, reason, self.requirements),
            log=display_path(self.log_path),
            seconds=round(seconds, 3),
            prepare=records,
            attempts=tuple(attempts),
            checks=checks,
            metrics={name: tuple(samples) for name, samples in self.series.items()},
            gates=gates,
        )
        return self.recorder.record(self.planned, result) if self.recorder else result

    def judge(self, attempts: list[Attempt]) -> tuple[Gate, ...]:
        """The bands of ``expect:`` against history, once the job succeeded."""
        if self.recorder is None or not attempts or attempts[-1].outcome != "succeeded":
            return ()
        return self.recorder.judge(self.planned, self.series)


def verdict(
    records: tuple[PrepareRecord, ...],
    attempts: list[Attempt],
    checks: tuple[Check, ...],
    interrupted: str = "",
    xfail: str | None = None,
    gates: tuple[Gate, ...] = (),
) -> tuple[Status, str]:
    """A cell's status and the reason for it; a failure the matrix expects (xfail) is not one."""
    if interrupted:
        status, reason = Status.INTERRUPTED, interrupted
    else:
        status, reason = _status(records, attempts, checks, gates)
    if status is Status.FAILED and xfail:
        return Status.XFAIL, f"expected to fail ({xfail}): {reason}"
    return status, reason


def _status(
    records: tuple[PrepareRecord, ...],
    attempts: list[Attempt],
    checks: tuple[Check, ...],
    gates: tuple[Gate, ...],
) -> tuple[Status, str]:
    failed_step = next((r for r in records if r.status == "failed"), None)
    if failed_step is not None:
        return Status.FAILED, f"prepare step {failed_step.name} failed: {failed_step.detail}"
    last = attempts[-1]
    if last.outcome == "interrupted":
        return Status.INTERRUPTED, last.detail
    if last.outcome == "infra":
        return Status.ERROR, last.detail + (f" ({last.number} attempts)" if last.number > 1 else "")
    if last.outcome in ("failed", "timeout"):
        return Status.FAILED, last.detail
    broken = [c.message for c in checks if not c.ok] + [g.message for g in gates if g.fails]
    return (Status.FAILED, "; ".join(broken)) if broken else (Status.PASSED, "")
