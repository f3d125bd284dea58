"""session: run the planned cells one after another, and say what happened to each.

``run`` is the whole run step: requirements -> preflight -> the job env of every cell
(probes, secrets) -> for each cell: prepare -> attempts (cluster, submit, watch; an
infrastructure failure is retried as the spec's ``retry`` allows) -> metric checks.
A Ctrl-C (or SIGTERM, SIGHUP) stops the job it interrupts and ends the run; the cells so far
are reported. Whatever ends a cell early — an interrupt, a log that cannot be written, a
fault of run-matrix itself — the job it submitted is stopped first, and the cell says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from runner.launch.planned import Planned
from runner.results.outcome import CellResult, RunResult, Status
from runner.run import processes
from runner.run.cell_run import CellRun, cell_result
from runner.run.plan import Options
from runner.run.progress import Progress
from runner.run.record import Tracker, Untracked
from runner.run.setup import Setup
from runner.run.view import View

if TYPE_CHECKING:
    from runner.results.history.recorder import Recorder


def run(
    planned: Sequence[Planned],
    options: Options,
    view: View,
    tracker: Tracker | None = None,
    on_cell: Callable[[RunResult], None] | None = None,
    recorder: Recorder | None = None,
) -> RunResult:
    """Run the cells; ``on_cell`` gets the results so far after each cell (to write them at once)."""
    progress = Progress(options.strict, on_cell or (lambda result: None))
    try:
        setup = Setup.of(planned, options)
    except KeyboardInterrupt as exc:
        progress.interrupted(processes.cause_of(exc))
        for each in planned:
            progress.add(cell_result(each, Status.SKIPPED, progress.not_run, ()))
        return progress.result(complete=True)
    progress.notes = setup.notes
    progress.publish()  # a report from the start: a run killed in its first cell leaves one too
    tracker = tracker or Untracked()
    for each in planned:
        try:
            progress.add(_cell(each, setup, options, view, tracker, progress, recorder))
        except KeyboardInterrupt as exc:  # between cells: the cell's own result is in already
            progress.interrupted(processes.cause_of(exc))
    return progress.result(complete=True)


def _cell(
    each: Planned,
    setup: Setup,
    options: Options,
    view: View,
    tracker: Tracker,
    progress: Progress,
    recorder: Recorder | None,
) -> CellResult:
    cell_id = each.cell.id
    requirements = setup.checked[cell_id]
    reason = progress.not_run or setup.skips[cell_id]
    if reason:
        result = cell_result(each, Status.SKIPPED, reason, requirements)
    elif cell_id in setup.refused:
        result = cell_result(each, Status.FAILED, setup.refused[cell_id], requirements)
    else:
        cell_run = CellRun(
            each, requirements, setup.envs[cell_id], options, view, setup.redact, tracker, recorder
        )
        result = cell_run.run()
        progress.clusters += cell_run.clusters
        if cell_run.stopped_by:
            progress.interrupted(cell_run.stopped_by)
    view.finished(result)
    if result.status in (Status.FAILED, Status.ERROR) and not options.keep_going and not progress.not_run:
        progress.not_run = f"not run: {cell_id} failed (--keep-going runs the rest)"
    return result
