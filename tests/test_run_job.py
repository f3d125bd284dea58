from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from runner.run.job import JobOutcome, LogTail, classify
from runner.run.plan import job_name

ray_jobs = pytest.importorskip("ray.job_submission")


def info(status: str, error_type: str | None = None, code: int | None = None, message: str = "") -> object:
    return ray_jobs.JobInfo(
        status=ray_jobs.JobStatus(status),
        entrypoint="python3 train.py",
        message=message,
        error_type=ray_jobs.JobErrorType(error_type) if error_type else None,
        driver_exit_code=code,
    )


@pytest.mark.parametrize(
    ("job", "outcome"),
    [
        (info("SUCCEEDED", code=0), JobOutcome("succeeded", "the job succeeded")),
        (
            info(
                "FAILED", "JOB_ENTRYPOINT_COMMAND_ERROR", 3, "Job entrypoint command failed with exit code 3"
            ),
            JobOutcome("failed", "the job exited with code 3: AssertionError: ppo_kl"),
        ),
        (
            info("FAILED", "JOB_SUPERVISOR_ACTOR_DIED", message="Job supervisor actor died: gone\nmore"),
            JobOutcome(
                "infra", "Ray lost the job (JOB_SUPERVISOR_ACTOR_DIED): Job supervisor actor died: gone"
            ),
        ),
        (info("STOPPED"), JobOutcome("failed", "the job was stopped (not by run-matrix)")),
        (  # Ray read the log once the driver had exited: its quote wins over a log read too early
            info(
                "FAILED",
                "JOB_ENTRYPOINT_COMMAND_ERROR",
                3,
                "Job entrypoint command failed with exit code 3, last available logs (truncated to 20,000"
                " chars):\nRunning entrypoint for job j\nAssertionError: ppo_kl must be < 1e-8\n\n",
            ),
            JobOutcome("failed", "the job exited with code 3: AssertionError: ppo_kl must be < 1e-8"),
        ),
    ],
)
def test_whose_fault_a_failure_is(job, outcome):
    assert classify(job, ["step 0: {}", "AssertionError: ppo_kl"]) == outcome


class Chunks:
    """A stand-in for the client's websocket tail: these chunks, then the end of the job."""

    def __init__(self, *chunks: str) -> None:
        self.chunks = chunks

    async def tail_job_logs(self, submission_id: str) -> AsyncIterator[str]:
        for chunk in self.chunks:
            yield chunk


def test_the_tail_yields_whole_lines_and_the_full_log_fills_the_gap():
    tail = LogTail(Chunks("step 0: {'a'", ": 1}\nstep 1", ""), "job")
    lines: list[str] = []
    while len(lines) < 1:
        lines += tail.lines(1.0)
    assert lines == ["step 0: {'a': 1}"]
    full = "step 0: {'a': 1}\nstep 1: {'a': 2}\nthe end"
    assert tail.finish(full) == ["step 1: {'a': 2}", "the end"]


def test_job_names_are_safe_for_ray():
    assert job_name("rocm/glm5-async[fp8_rollout=true]") == "rocm-glm5-async-fp8_rollout-true"
