"""lifecycle: a whole run around its cells — what happens before the first and after the last,
whatever ends the run.

1. stop what runs that died left (``cleanup``); 2. record this run (``record.Ledger``);
3. run the cells (``session``), the report files rewritten after each (``outputs``);
4. stop what a fault left and close the record; 5. write the report files one last time.
SIGTERM and SIGHUP act as Ctrl-C throughout, and every clean-up finishes before a further
signal takes effect.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.errors import ExitCode
from runner.launch.planned import Planned
from runner.results.outcome import RunResult
from runner.run import cleanup, processes, session
from runner.run.outputs import Outputs
from runner.run.plan import Options
from runner.run.record import Ledger, state_dir
from runner.run.view import View

if TYPE_CHECKING:
    from runner.results.history.recorder import Recorder

Say = Callable[[str], None]


@dataclass(frozen=True)
class Finished:
    result: RunResult
    left: tuple[str, ...]  # what this run started and could not stop (its record keeps it)
    failed: str  # report files or the run record that could not be written, or ""

    @property
    def exit_code(self) -> ExitCode:
        if self.failed and self.result.exit_code is not ExitCode.INTERRUPTED:
            return ExitCode.ENVIRONMENT
        return self.result.exit_code


def run(
    planned: Sequence[Planned],
    options: Options,
    outputs: Outputs,
    view: View,
    say: Say,
    recorder: Recorder | None = None,
) -> Finished:
    """Run the cells with everything around them; ``say`` tells a person what was cleaned up;
    ``recorder`` (the history store) judges bands and records every attempt."""
    with processes.signals_interrupt():
        state = state_dir(os.environ)
        for cleaned in cleanup.clean(state):
            say(cleaned.describe())
        ledger = Ledger.open(state, options.run_id, options.log_dir)
        try:
            result = session.run(planned, options, view, ledger, on_cell=outputs.write, recorder=recorder)
        finally:
            with processes.deferred_interrupt():
                view.close()
                left = _stop_what_is_left(ledger)
        with processes.deferred_interrupt():
            outputs.write(result)
    failed = "\n".join(filter(None, [outputs.failed(), ledger.warning, recorder.failed if recorder else ""]))
    return Finished(result, left, failed)


def _stop_what_is_left(ledger: Ledger) -> tuple[str, ...]:
    """Normally nothing: every job and head is stopped where its cell ends. What a fault left is
    stopped now; what cannot be stays in the record for `run-matrix cleanup`."""
    left: tuple[str, ...] = ()
    if ledger.holds_anything:
        cleaned = cleanup.Cleaned(ledger.run_id, os.getpid(), ledger.record.log_dir)
        cleanup.stop_left(ledger.record, cleaned)
        ledger.save()
        left = tuple(cleaned.left)
    ledger.close()
    return left
