"""progress: the results of a run so far, handed on after each cell to be written at once.

A run that dies, however it dies, leaves the report of the cells it finished.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.results.outcome import CellResult, ClusterRecord, RunResult
from runner.run import processes


# mutable: the results so far, added to after each cell
@dataclass
class Progress:
    """The results so far, handed on after each cell: a run that dies leaves its report behind."""

    strict: bool
    on_cell: Callable[[RunResult], None]
    results: list[CellResult] = field(default_factory=list)
    clusters: list[ClusterRecord] = field(default_factory=list)
    not_run: str = ""
    stopped_by: str = ""
    notes: tuple[str, ...] = ()  # what the run's summary says besides the cells (miles' parser)
    started_at: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    )
    started: float = field(default_factory=time.monotonic)

    def add(self, result: CellResult) -> None:
        self.results.append(result)
        self.publish()

    def publish(self) -> None:
        with processes.deferred_interrupt():  # the report of a finished cell is written whole
            self.on_cell(self.result(complete=False))

    def interrupted(self, cause: str) -> None:
        self.stopped_by = self.stopped_by or cause
        self.not_run = f"not run: the run was interrupted ({self.stopped_by})"

    def result(self, complete: bool) -> RunResult:
        return RunResult(
            tuple(self.results),
            self.started_at,
            time.monotonic() - self.started,
            tuple(self.clusters),
            self.strict,
            complete=complete,
            stopped_by=self.stopped_by,
            notes=self.notes,
        )
