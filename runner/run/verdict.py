"""verdict: a cell's status and the reason for it, from its prepare steps, attempts, verify checks,
metric checks and gates."""

from __future__ import annotations

from runner.results.outcome import Attempt, Check, Gate, PrepareRecord, Status, VerifyRecord


def verdict(
    records: tuple[PrepareRecord, ...],
    attempts: list[Attempt],
    checks: tuple[Check, ...],
    ended: str = "",
    xfail: str | None = None,
    gates: tuple[Gate, ...] = (),
    verified: tuple[VerifyRecord, ...] = (),
) -> tuple[Status, str]:
    """A cell's status and the reason for it; a failure the matrix expects (xfail) is not one.
    ``ended`` says why the cell ended early: an interrupt, or an error of its own."""
    if ended:
        status, reason = (Status.INTERRUPTED if ended.startswith("interrupted") else Status.ERROR), ended
    else:
        status, reason = _status(records, attempts, checks, gates, verified)
    if status is Status.FAILED and xfail:
        return Status.XFAIL, f"expected to fail ({xfail}): {reason}"
    return status, reason


def _status(
    records: tuple[PrepareRecord, ...],
    attempts: list[Attempt],
    checks: tuple[Check, ...],
    gates: tuple[Gate, ...],
    verified: tuple[VerifyRecord, ...],
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
    unverified = next((v for v in verified if v.outcome != "succeeded"), None)
    if unverified is not None:
        status = Status.ERROR if unverified.outcome == "infra" else Status.FAILED
        return status, f"verify {unverified.name} ({unverified.call}): {unverified.detail}"
    broken = [c.message for c in checks if not c.ok] + [g.message for g in gates if g.fails]
    return (Status.FAILED, "; ".join(broken)) if broken else (Status.PASSED, "")
