"""What the run step is given: the planned cells and the options of this run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.cell import Cell
from runner.command import Command
from runner.errors import Problem
from runner.render import Launch


@dataclass(frozen=True)
class Planned:
    """One selected cell, rendered: what will run, and the command that runs it again."""

    cell: Cell
    launch: Launch
    spec: str  # the spec file as shown to people
    reproduce: str  # a run-matrix command line that runs this cell alone
    warnings: tuple[Problem, ...] = ()

    def command(self, phase: str, name: str | None = None) -> Command:
        return next(c for c in self.launch.commands if c.phase == phase and name in (None, c.name))

    @property
    def services(self) -> tuple[Command, ...]:
        """What the launch starts after the Ray head, before the submission."""
        return tuple(c for c in self.launch.commands if c.phase == "cluster" and c.stays_up)

    @property
    def entry_argv(self) -> tuple[str, ...]:
        """``python3 <miles>/<train script> MODEL_ARGS... flags``: the train job's entrypoint."""
        return self.job_argv(self.command("submit"))

    @property
    def verifies(self) -> tuple[Command, ...]:
        """The checks that run once the job succeeded, in the spec's order."""
        return tuple(c for c in self.launch.commands if c.phase == "verify")

    @staticmethod
    def job_argv(command: Command) -> tuple[str, ...]:
        """A ``ray job submit`` command's entrypoint: its argv after ``--``."""
        return command.argv[command.argv.index("--") + 1 :]


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


def job_name(cell_id: str) -> str:
    """``rocm/glm5-async[fp8_rollout=true]`` -> ``rocm-glm5-async-fp8_rollout-true``."""
    return re.sub(r"[^A-Za-z0-9_]+", "-", cell_id).strip("-") or "cell"


def verify_job_id(submission_id: str, number: int, name: str) -> str:
    """The Ray submission id of a cell's ``number``-th verify job (from 1): numbered, since names
    such as ``a b`` and ``a-b`` give one job name and Ray refuses an id it already has."""
    return f"{submission_id}-verify{number}-{job_name(name)}"
