"""Results as data: what happened to each cell, attempt and prepare step. Reports read only these."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Literal

from runner.errors import ExitCode


class Status(str, Enum):
    PASSED = "passed"
    FAILED = "failed"  # the job failed, timed out, or a metric broke its bound
    ERROR = "error"  # the infrastructure failed (after every retry)
    SKIPPED = "skipped"
    XFAIL = "xfail"  # failed, as the matrix says it is expected to
    INTERRUPTED = "interrupted"


StepStatus = Literal["ran", "skipped", "failed"]
# stopped: run-matrix cut the attempt short (its log could not be written, a fault of its own)
AttemptOutcome = Literal["succeeded", "failed", "infra", "timeout", "interrupted", "stopped"]


@dataclass(frozen=True)
class PrepareRecord:
    name: str
    kind: str
    status: StepStatus
    detail: str
    seconds: float = 0.0
    result: str | None = None  # a call whose result flags take ($${prepared:FUNCTION}): what it returned


@dataclass(frozen=True)
class Attempt:
    """One job submission."""

    number: int
    submission_id: str
    outcome: AttemptOutcome
    detail: str
    seconds: float
    run_id: str = ""  # the name its flags' $${run-id} got ("" when no flag names the run)
    named: tuple[tuple[str, str], ...] = ()  # those flags with the name in them: (--save, /out/NAME/ckpt)


@dataclass(frozen=True)
class VerifyRecord:
    """One ``verify:`` check, run as a job of its own once the cell's job succeeded."""

    name: str
    call: str  # module.function of the checkout
    outcome: AttemptOutcome
    detail: str
    seconds: float = 0.0


@dataclass(frozen=True)
class ReadRecord:
    """One flag value read at launch from a file an earlier cell wrote (``$${read-integer:PATH}``)."""

    flag: str  # --ckpt-step
    path: str
    value: str  # what the job got
    reference: str  # the token of the launch it replaced


@dataclass(frozen=True)
class RequirementResult:
    name: str
    kind: str
    met: bool
    optional: bool
    detail: str  # what was found, or why it is unmet
    why: str = ""  # the spec's reason for the requirement

    def describe(self) -> str:
        return f"requires.{self.name}: {self.detail}" + (f" ({self.why})" if self.why else "")


@dataclass(frozen=True)
class Check:
    """One expectation against the metrics the job printed."""

    metric: str
    expect: str
    ok: bool
    message: str


GateVerdict = Literal["pass", "fail", "inactive", "error"]


@dataclass(frozen=True)
class Gate:
    """One coordinate of a band (a metric at one step; ``step`` -1 is its last value) judged
    against the mean of the same coordinate in the trusted baseline runs."""

    metric: str
    step: int  # -1: the series' last value (steps: last), whatever step that was
    at_step: int | None  # the step the value came from
    value: float | None  # None: the value could not be selected (verdict error)
    reference: float | None  # the baseline mean; None when the gate is inactive
    low: float | None
    high: float | None
    baseline_runs: int  # how many trusted runs had this coordinate
    verdict: GateVerdict
    enforce: bool
    message: str

    @property
    def fails(self) -> bool:
        """Whether it fails the cell: out of the corridor (or unselectable) and enforced."""
        return self.enforce and self.verdict in ("fail", "error")

    @property
    def corridor(self) -> str:
        return f"[{self.low:.6g}, {self.high:.6g}]" if self.low is not None and self.high is not None else ""


@dataclass(frozen=True)
class Sample:
    """One value of one metric line: ``step 3: {'train/ppo_kl': 0.0}``."""

    kind: str  # step, rollout, perf, critic-step
    step: int
    value: float


@dataclass(frozen=True)
class CellResult:
    id: str
    status: Status
    reason: str
    spec: str  # the spec file, as the user named it
    spec_chain: tuple[str, ...]  # its extends chain, bases first
    hardware: str
    content_hash: str
    reproduce: str
    log: str = ""
    seconds: float = 0.0
    requirements: tuple[RequirementResult, ...] = ()
    prepare: tuple[PrepareRecord, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    checks: tuple[Check, ...] = ()
    verified: tuple[VerifyRecord, ...] = ()
    reads: tuple[ReadRecord, ...] = ()  # the values read at launch, of the last attempt
    metrics: dict[str, tuple[Sample, ...]] = field(default_factory=dict)
    gates: tuple[Gate, ...] = ()
    history: str = ""  # the id of this cell's last attempt in the history store ("" when not recorded)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["prepare"] = [  # a step's result only where a flag takes it: every other reads as it always has
            {key: value for key, value in asdict(step).items() if key != "result" or value is not None}
            for step in self.prepare
        ]
        data["attempts"] = [  # an attempt's run_id only where a flag names the run, as with prepare's result
            {key: value for key, value in asdict(attempt).items() if key not in ("run_id", "named") or value}
            | ({"named": dict(attempt.named)} if attempt.named else {})
            for attempt in self.attempts
        ]
        data["gates"] = [{**asdict(g), "corridor": g.corridor} for g in self.gates]
        data["metrics"] = {
            name: [{"kind": s.kind, "step": s.step, "value": s.value} for s in samples]
            for name, samples in self.metrics.items()
        }
        return data


@dataclass(frozen=True)
class ClusterRecord:
    """Where the jobs ran: a Ray head this run started (and stopped), or one it was given."""

    address: str
    started: bool
    pid: int | None = None


@dataclass(frozen=True)
class RunResult:
    cells: tuple[CellResult, ...]
    started: str  # ISO 8601
    seconds: float
    clusters: tuple[ClusterRecord, ...] = ()
    strict: bool = False
    complete: bool = True  # False: the cells so far, written while the run goes on
    stopped_by: str = ""  # the interrupt that ended the run early (Ctrl-C, SIGTERM, SIGHUP)
    notes: tuple[str, ...] = ()  # about the run as a whole: what miles' parser checked, or why not

    @property
    def exit_code(self) -> ExitCode:
        statuses = {c.status for c in self.cells}
        if self.stopped_by or Status.INTERRUPTED in statuses:
            return ExitCode.INTERRUPTED
        if statuses & {Status.FAILED, Status.ERROR} or (self.strict and Status.SKIPPED in statuses):
            return ExitCode.RUN_FAILED
        if statuses == {Status.SKIPPED} and self.complete:  # an empty selection (a CI shard) is no failure
            return ExitCode.NOTHING_RAN
        return ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code is ExitCode.OK,
            "exit_code": int(self.exit_code),
            "complete": self.complete,
            "stopped_by": self.stopped_by or None,
            "started": self.started,
            "seconds": round(self.seconds, 3),
            "clusters": [asdict(c) for c in self.clusters],
            "notes": list(self.notes),
            "cells": [c.to_json() for c in self.cells],
        }
