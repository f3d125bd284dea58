"""Run run-matrix on one hostile input in a child process, and measure what it cost.

The child runs under resource limits (address space, CPU seconds) so that a runaway case
fails the test instead of the machine; its CPU time and peak memory come from ``wait4``'s
rusage of that one child, not from guesses.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MEMORY_CAP = 1536 * 2**20  # the child's address space: a runaway case dies instead of the machine
CPU_CAP_S = 20


@dataclass(frozen=True)
class Outcome:
    code: int
    output: str  # stdout and stderr together
    cpu_s: float
    peak_mb: float


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_CAP_S, CPU_CAP_S))


def run_cli(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Outcome:
    command = [sys.executable, "-c", "from runner.cli import console; console()", *argv]
    child_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    with subprocess.Popen(
        command,
        cwd=cwd,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_limits,
    ) as child:
        assert child.stdout is not None
        output = child.stdout.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    return Outcome(
        child.returncode,
        output,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,  # kilobytes on Linux
    )
