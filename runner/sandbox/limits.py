"""limits: what one sandboxed run may use, set as resource limits before the child starts."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The budget of one run. Every number bounds something a hostile child could exhaust."""

    wall_s: float = 60.0  # the whole run, then it is killed with everything it started
    cpu_s: int = 60  # CPU seconds of each process
    address_space: int = 2048 * MiB  # virtual memory of each process
    file_size: int = 64 * MiB  # the largest file it may write (its results included)
    scratch: int = 64 * MiB  # the private /tmp (and HOME) in the isolated mode
    results: int = 64 * MiB  # the results folder, all its files together, in the isolated mode
    results_files: int = 16  # files read back from it; one holding more is refused whole
    processes: int = 64  # processes and threads it may have at once, beyond what its user runs
    open_files: int = 256
    output: int = 1 * MiB  # stdout and stderr kept; the rest is read and dropped, with a note

    def apply(self, tasks: int) -> None:
        """Set the limits on the calling process (the child, before it execs); inherited by all it
        starts. ``tasks``: what the child's user runs already (RLIMIT_NPROC counts per user)."""
        for limit, value in (
            (resource.RLIMIT_AS, self.address_space),
            (resource.RLIMIT_CPU, self.cpu_s),
            (resource.RLIMIT_FSIZE, self.file_size),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NPROC, tasks + self.processes),
        ):
            hard = resource.getrlimit(limit)[1]  # never above what run-matrix itself was given
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (value, value))


def tasks_of(uid: int) -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) ``uid`` runs now."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1"))
    return count


def nobody() -> int | None:
    """The uid the isolated child runs as when run-matrix is root (``None``: stay the caller)."""
    return 65534 if os.geteuid() == 0 else None
