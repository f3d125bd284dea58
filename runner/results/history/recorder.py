"""recorder: what ``run`` holds to judge a cell's bands against history, then record the cell.

``judge`` reads (one query per baseline a cell's bands use); ``record`` writes each attempt in
its own transaction, the last one with the metric series and gate verdicts. A run is trusted
(it may make baselines) when the cell passed, every gate held or was inactive — a report-only
gate out of its corridor included — and ``--no-record`` was not given.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from runner import __version__
from runner.knowledge import checkout
from runner.launch.planned import Planned
from runner.results.history import gates
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import CellResult, Gate, Sample, Status
from schemas.hardware import HardwareProfile
from schemas.run import Baseline, Expectation

NO_RECORD = "--no-record: judged, kept out of baselines"
STACK_ENV = "RUN_MATRIX_STACK"  # the stack as the job's environment reports it (CI: the image it pulled)


# mutable: ``failed`` keeps the first store access that failed, for the run's end
@dataclass
class Recorder:
    store: Store
    miles_commit: str = ""
    no_record: bool = False
    bisection: str = ""  # the bisection whose attempts these are: kept out of baselines
    told: Callable[[CellResult], str] | None = None  # what a cell's result tells the bisection
    failed: str = ""  # the first read or write of the store that failed during the run

    def identity(self, planned: Planned) -> Identity:
        cell = planned.cell
        return Identity(
            cell.id,
            planned.spec,
            cell.content_hash,
            cell.profile.name,
            self.miles_commit,
            __version__,
            stack_of(cell.profile, os.environ),
        )

    def judge(self, planned: Planned, series: Mapping[str, Sequence[Sample]]) -> tuple[Gate, ...]:
        """Every band of the cell's ``expect:`` against its baseline."""
        return self.judge_expectations(self.identity(planned), planned.cell.spec.expect, series)

    def judge_expectations(
        self, identity: Identity, expect: Mapping[str, Expectation], series: Mapping[str, Sequence[Sample]]
    ) -> tuple[Gate, ...]:
        banded = {name: e for name, e in expect.items() if e.band is not None}
        references: dict[tuple[str, int], gates.Reference] = {}
        for names in _by_baseline(banded).values():  # one query per baseline (usually one per cell)
            selections = {name: banded[name].selection for name in names}
            references.update(self.store.baseline(identity, _baseline_of(banded[names[0]]), selections))
        found = [gates.judge(name, e, series.get(name, []), references) for name, e in banded.items()]
        return tuple(gate for judged in found for gate in judged)

    def record(self, planned: Planned, result: CellResult) -> CellResult:
        """Write every attempt of ``result``; the result with the last attempt's run id (and, in a
        bisection, what the cell told it, on that last attempt)."""
        told = self.told(result) if self.told is not None else ""
        identity = self.identity(planned)
        # a cell whose prepare step failed has no attempt: it is recorded as attempt 0, not submitted
        attempts: list[tuple[int, str, str, str]] = [
            (a.number, a.submission_id, a.outcome, a.run_id) for a in result.attempts
        ]
        attempts = attempts or [(0, "", "not-submitted", "")]
        run_id = ""
        for number, submission_id, outcome, named in attempts:
            last = number == attempts[-1][0]
            trusted, note = self.trust(result) if last else (False, "retried")
            record = AttemptRecord(
                identity,
                number,
                submission_id,
                outcome,
                result.status.value,
                trusted,
                note,
                result.metrics if last else {},
                result.gates if last else (),
                result.seconds if last else None,
                named,
                self.bisection,
                told if last else "",
            )
            run_id = self.store.record(record)
        return replace(result, history=run_id)

    def trust(self, result: CellResult) -> tuple[bool, str]:
        if result.status is not Status.PASSED:
            return False, result.status.value
        outside = [g for g in result.gates if g.verdict in ("fail", "error")]
        if outside:
            return False, f"{outside[0].metric} left its corridor (enforce: false)"
        if self.no_record:
            return False, NO_RECORD
        if self.bisection:
            return False, f"bisection {self.bisection}: an older miles, kept out of baselines"
        return True, ""


def stack_of(profile: HardwareProfile, environ: Mapping[str, str]) -> str:
    """The software stack a run ran on: ``$RUN_MATRIX_STACK`` as the job's environment reports it
    (the image CI pulled, its SGLang and Megatron versions), else what the profile's stack states."""
    reported = " ".join(environ.get(STACK_ENV, "").split())
    if reported:
        return reported[:500]
    software = profile.software
    if software is None:
        return ""
    parts = [f"{profile.stack}: {software.container}" if software.container else str(profile.stack)]
    parts += [
        f"{name} {value}"
        for name, value in (("sglang", software.sglang), ("te", software.transformer_engine))
        if value
    ]
    return "; ".join(parts)


def _by_baseline(banded: Mapping[str, Expectation]) -> dict[tuple[int, tuple[str, ...]], list[str]]:
    grouped: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for name, expectation in banded.items():
        baseline = _baseline_of(expectation)
        grouped.setdefault((baseline.runs, tuple(sorted(baseline.match))), []).append(name)
    return grouped


def _baseline_of(expectation: Expectation) -> Baseline:
    return expectation.baseline or Baseline()


def miles_commit(miles_root: Path | None) -> str:
    """HEAD of the miles checkout, read from ``.git`` through the door (no process started); ""
    when unknown."""
    return (checkout.head_commit(miles_root) or "") if miles_root is not None else ""
