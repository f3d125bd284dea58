from __future__ import annotations

import pytest

from runner.results.outcome import Attempt, Check, PrepareRecord, Status
from runner.run.verdict import verdict

RAN = (PrepareRecord("model", "hf-download", "ran", "downloaded a/b to /m"),)
OK = Attempt(1, "job-1", "succeeded", "the job succeeded", 9.0)
HELD = (Check("train/ppo_kl", "value <= 1e-08 at step 0", True, "ok"),)
BROKEN = (
    *HELD,
    Check("perf/step_time", "value <= 60 at the last step", False, "perf/step_time is 75 at step 2; ..."),
)


@pytest.mark.parametrize(
    ("records", "attempts", "checks", "expected"),
    [
        (RAN, [OK], HELD, (Status.PASSED, "")),
        (RAN, [OK], BROKEN, (Status.FAILED, "perf/step_time is 75 at step 2; ...")),
        (
            (PrepareRecord("model", "hf-download", "failed", "hf exited with code 4"),),
            [],
            (),
            (Status.FAILED, "prepare step model failed: hf exited with code 4"),
        ),
        (
            RAN,
            [
                Attempt(1, "j1", "infra", "Ray lost the job", 1.0),
                Attempt(2, "j2", "infra", "Ray lost the job", 1.0),
            ],
            (),
            (Status.ERROR, "Ray lost the job (2 attempts)"),
        ),
        (
            RAN,
            [Attempt(1, "j", "timeout", "timed out after 4 s; the job was stopped", 4.0)],
            HELD,
            (Status.FAILED, "timed out after 4 s; the job was stopped"),
        ),
        (
            RAN,
            [Attempt(1, "j", "interrupted", "interrupted (Ctrl-C); the job was stopped", 1.0)],
            (),
            (Status.INTERRUPTED, "interrupted (Ctrl-C); the job was stopped"),
        ),
    ],
)
def test_verdict(records, attempts, checks, expected):
    assert verdict(records, attempts, checks) == expected


def test_an_expected_failure_and_an_interrupt_outside_the_job():
    assert verdict(RAN, [OK], BROKEN, xfail="NSA kernels on gfx942") == (
        Status.XFAIL,
        "expected to fail (NSA kernels on gfx942): perf/step_time is 75 at step 2; ...",
    )
    assert verdict(RAN, [OK], HELD, xfail="NSA kernels on gfx942") == (Status.PASSED, "")
    assert verdict(RAN, [], (), ended="interrupted (SIGTERM) during prepare: model (hf-download)") == (
        Status.INTERRUPTED,
        "interrupted (SIGTERM) during prepare: model (hf-download)",
    )


def test_a_cell_that_cannot_go_on_is_an_error_not_a_failure():
    lost = "cannot write the log logs/a.log: File too large; stopped during running: a-1"
    assert verdict(RAN, [OK], HELD, ended=lost, xfail="known") == (Status.ERROR, lost)
