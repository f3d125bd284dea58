"""What one cell's result tells a bisection: pass, fail (the cell's own failure; with --metric, only
the job's or that metric's), or env (it could not run here) — never fail for the environment."""

from __future__ import annotations

import pytest

from runner.bisect.attempt import told
from runner.results.outcome import Attempt, CellResult, Check, Gate, Status

LOGPROB, STEP_TIME = "train/train_rollout_logprob_abs_diff", "perf/step_time"


def result(
    status: Status, outcome: str = "succeeded", checks: tuple[Check, ...] = (), gates=()
) -> CellResult:
    attempts = (Attempt(1, "job-1", outcome, "", 1.0),) if outcome else ()  # type: ignore[arg-type]
    return CellResult("fake/async", status, "", "s.yaml", (), "h", "abc", "", attempts=attempts,
                      checks=checks, gates=gates)  # fmt: skip


def check(metric: str, ok: bool) -> Check:
    return Check(metric, "value <= 0.1", ok, "")


def gate(metric: str, verdict: str, enforce: bool = True) -> Gate:
    return Gate(metric, -1, 2, 40.0, 26.0, 23.4, 28.6, 3, verdict, enforce, "")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("found", "outcome"),
    [
        (result(Status.PASSED), "pass"),
        (result(Status.XFAIL, "failed"), "pass"),  # run's verdict: a failure the matrix expects
        (result(Status.FAILED, "failed"), "fail"),
        (result(Status.FAILED, "", ()), "fail"),  # a prepare step failed
        (result(Status.FAILED, "timeout"), "env"),  # a timeout is never bad
        (result(Status.ERROR, "infra"), "env"),  # Ray lost the job
        (result(Status.SKIPPED, ""), "env"),  # a requirement this machine does not meet
    ],
)
def test_what_a_result_tells(found: CellResult, outcome: str):
    assert told(found) == outcome


def test_with_a_metric_only_its_check_or_gate_and_the_job_s_exit_decide():
    other = result(Status.FAILED, checks=(check(LOGPROB, True), check(STEP_TIME, False)))
    assert (told(other), told(other, LOGPROB)) == ("fail", "pass")
    its_own = result(Status.FAILED, checks=(check(LOGPROB, False),))
    assert told(its_own, LOGPROB) == "fail"
    banded = result(Status.FAILED, gates=(gate(STEP_TIME, "fail"),))
    assert (told(banded, STEP_TIME), told(banded, LOGPROB)) == ("fail", "pass")
    reported = result(Status.PASSED, gates=(gate(STEP_TIME, "fail", enforce=False),))
    assert told(reported, STEP_TIME) == "pass"
    crashed = result(Status.FAILED, "failed")
    assert told(crashed, LOGPROB) == "fail"  # no metric can be judged: the job failed
