"""What the run step is given besides the planned cells: this run's options, and its jobs' names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Options:
    miles_root: Path | None
    ray_address: str | None
    log_dir: Path
    caller_env: Mapping[str, str] = field(default_factory=dict)
    skip_prepare: bool = False
    preflight: bool = True
    timeout: float | None = None
    keep_going: bool = False
    strict: bool = False
    poll_seconds: float = 0.5
    run_id: str = ""  # names this run's record and, by default, its log folder
    miles_check: bool = True  # run miles' own parser on every launch before the first ray start
    miles_python: Path | None = None  # its interpreter (default: the node's python3)
    trust_checkout: bool = False  # run it without the sandbox (--trust-checkout)
    dry_run: bool = False  # decide what the run would, start nothing (no probe; miles' parser only with PY)


def job_name(cell_id: str) -> str:
    """``rocm/glm5-async[fp8_rollout=true]`` -> ``rocm-glm5-async-fp8_rollout-true``."""
    return re.sub(r"[^A-Za-z0-9_]+", "-", cell_id).strip("-") or "cell"


def verify_job_id(submission_id: str, number: int, name: str) -> str:
    """The Ray submission id of a cell's ``number``-th verify job (from 1): numbered, since names
    such as ``a b`` and ``a-b`` give one job name and Ray refuses an id it already has."""
    return f"{submission_id}-verify{number}-{job_name(name)}"
