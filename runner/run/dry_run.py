"""dry_run: what ``run`` decides before it starts anything, and the exit code that gives (``--dry-run``).

The run's own setup decides it (``setup.Setup``): the requirements and the matrix's skips, preflight,
the secrets of the job envs, miles' parser. ``Options.dry_run`` keeps it from starting anything: no
probe runs (its variable stays a ``${NAME}`` reference), and miles' parser runs (in the sandbox) only
when ``--miles-python`` names its interpreter. A cell that would run counts as passing: its job decides
the rest. ``--no-preflight`` makes it a plan only: nothing is decided, and the exit code is 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.errors import EnvironmentProblem, ExitCode, counted
from runner.launch.planned import Planned
from runner.results.outcome import CellResult, RunResult, Status
from runner.run.cell_run import cell_result
from runner.run.plan import Options
from runner.run.setup import Setup, skipped

STOPPED = "not start: the run stops before its first cell (see the verdict)"


@dataclass(frozen=True)
class Decision:
    """What the run would do with each cell, and as a whole."""

    would: dict[str, str]  # cell id -> "run", "skip: why", "fail: why" or "not run: why"
    code: ExitCode
    verdict: str  # "exit N: why", one line or a few
    notes: tuple[str, ...] = ()  # what the run's summary would say besides (miles' parser)

    def to_json(self) -> dict[str, Any]:
        return {"exit_code": int(self.code), "verdict": self.verdict, "notes": list(self.notes)}

    def text(self) -> str:
        return "".join(f"run-matrix: {note}\n" for note in self.notes) + f"verdict: {self.verdict}\n"


def decide(planned: Sequence[Planned], options: Options) -> Decision:
    _, skips = skipped(planned, options)
    if not options.preflight:
        would = {p.cell.id: _skip(skips[p.cell.id]) or "run" for p in planned}
        return Decision(would, ExitCode.OK, "exit 0: a plan only (--no-preflight): nothing was checked")
    try:
        setup = Setup.of(planned, options)
    except EnvironmentProblem as exc:
        would = {p.cell.id: _skip(skips[p.cell.id]) or STOPPED for p in planned}
        return Decision(would, ExitCode.ENVIRONMENT, f"exit {int(ExitCode.ENVIRONMENT)}: {exc}")
    decided = _cells(planned, setup, options.keep_going)
    outcome = RunResult(tuple(result for _, result in decided), "", 0.0, strict=options.strict)
    would = {result.id: said for said, result in decided}
    return Decision(would, outcome.exit_code, _verdict(outcome), setup.notes)


def _cells(planned: Sequence[Planned], setup: Setup, keep_going: bool) -> list[tuple[str, CellResult]]:
    """Each cell's fate as the run's session gives it: a cell miles refuses fails, and without
    ``--keep-going`` the cells after it are not run."""
    decided = []
    not_run = ""
    for each in planned:
        cell_id = each.cell.id
        if not_run or setup.skips[cell_id]:
            status, would = Status.SKIPPED, not_run or _skip(setup.skips[cell_id])
        elif cell_id in setup.refused:
            status, would = Status.FAILED, f"fail: {setup.refused[cell_id]}"
            not_run = "" if keep_going else f"not run: {cell_id} would fail (--keep-going runs the rest)"
        else:
            status, would = Status.PASSED, "run"
        decided.append((would, cell_result(each, status, would, setup.checked[cell_id])))
    return decided


def _skip(reason: str) -> str:
    """``skip: why``; a matrix's own skip says ``skip:`` already."""
    return f"skip: {reason.removeprefix('skip: ')}" if reason else ""


def _verdict(outcome: RunResult) -> str:
    code = outcome.exit_code
    counts = Counter(c.status for c in outcome.cells)
    running, skipping = counts[Status.PASSED], counts[Status.SKIPPED]
    if code is ExitCode.NOTHING_RAN:
        return f"exit {int(code)}: nothing would run, every selected cell is skipped"
    if code is ExitCode.RUN_FAILED and counts[Status.FAILED]:
        return f"exit {int(code)}: miles' parser refuses {counted(counts[Status.FAILED], 'cell')}"
    if code is ExitCode.RUN_FAILED:
        skipped = counted(skipping, "cell")
        return f"exit {int(code)}: --strict fails the run on a skip, and {skipped} would be skipped"
    if not outcome.cells:
        return f"exit {int(code)}: no cell is selected"
    return f"exit {int(code)} if the jobs pass: {counted(running, 'cell')} would run, {skipping} skipped"
