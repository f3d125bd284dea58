"""--budget-gpu-hours: a plan's GPU-hours against a cap (as NeMo-RL caps its nightly suite).

A cell costs est_time x GPUs (nodes x GPUs per node) x attempts (1 + ``retry.infra``: each retry
counted, as the worst case spends it); est_time is the history's where there is one.
"""

from __future__ import annotations

from schemas.ci_plan import CiPlan

LARGEST = 5  # cells a refusal names


def over(plan: CiPlan, limit: float) -> str | None:
    """Why the plan exceeds ``limit`` GPU-hours, naming the total and the largest cells; None within."""
    if plan.gpu_hours <= limit:
        return None
    largest = sorted(plan.cells, key=lambda c: (-c.gpu_hours, c.id))[:LARGEST]
    named = ", ".join(
        f"{c.id} {hours(c.gpu_hours)} h ({c.est_time} s x {c.gpus} GPUs x {c.attempts})" for c in largest
    )
    return (
        f"the plan needs {hours(plan.gpu_hours)} GPU-hours, over --budget-gpu-hours {limit:g}; "
        f"largest: {named}. Plan fewer cells (-k, --changed) or raise the budget"
    )


def hours(value: float) -> str:
    """GPU-hours as a person reads them: one decimal (``16.8``, not ``16.8331``); a cost too small to
    show at one decimal says so rather than read as nothing."""
    return f"{value:.1f}" if value == 0 or value >= 0.05 else "under 0.1"
