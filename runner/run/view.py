"""What a person watches while cells run (on stderr): a rich live board on a terminal, lines otherwise.

The board shows each cell's phase, elapsed time, last step and key metrics (those the
spec bounds), and the last log line — which, during a long prepare step, is the
download's or conversion's own progress.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from runner.errors import counted, printable
from runner.results.outcome import CellResult, Sample, Status

STYLES = {
    Status.PASSED: "green",
    Status.FAILED: "red",
    Status.ERROR: "red",
    Status.SKIPPED: "yellow",
    Status.XFAIL: "yellow",
    Status.INTERRUPTED: "magenta",
}


class View(Protocol):
    def started(self, cell_id: str, watched: tuple[str, ...]) -> None: ...
    def phase(self, cell_id: str, text: str) -> None: ...
    def output(self, cell_id: str, line: str) -> None: ...
    def metrics(self, cell_id: str, found: list[tuple[str, Sample]]) -> None: ...
    def finished(self, result: CellResult) -> None: ...
    def close(self) -> None: ...


def reasons(result: CellResult) -> list[str]:
    """Why the cell ended as it did: each unmet requirement apart, else the one reason (or the checks);
    escaped, as a reason may quote what a job or a prepare step printed."""
    unmet = [r.describe() for r in result.requirements if not r.met and not r.optional]
    if unmet and result.reason == "; ".join(unmet):
        return [printable(reason) for reason in unmet]
    if result.reason:
        return [printable(result.reason)]
    count = len(result.checks)
    return [f"{counted(count, 'check')} held"] if count else []


def for_console(console: Console) -> View:
    return LiveView(console) if console.is_terminal else PlainView(console)


# mutable: a cell's row of the live view, updated as its events come
@dataclass
class _Row:
    watched: tuple[str, ...]
    phase: str = "starting"
    started: float = field(default_factory=time.monotonic)
    step: str = ""
    values: dict[str, float] = field(default_factory=dict)
    last_line: str = ""
    result: CellResult | None = None

    def key_metrics(self) -> str:
        names = self.watched or tuple(self.values)[:3]
        return "  ".join(f"{n}={self.values[n]:g}" for n in names if n in self.values)


class PlainView:
    """One line per event worth a line: phases, metric lines, results."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.watched: dict[str, tuple[str, ...]] = {}
        self.said: dict[tuple[str, ...], str] = {}  # reasons printed in full -> the first cell they were for

    def started(self, cell_id: str, watched: tuple[str, ...]) -> None:
        self.watched[cell_id] = watched

    def phase(self, cell_id: str, text: str) -> None:
        self.console.print(f"{cell_id}: {printable(text)}", highlight=False, markup=False, soft_wrap=True)

    def output(self, cell_id: str, line: str) -> None:
        pass  # the cell's log file has every line

    def metrics(self, cell_id: str, found: list[tuple[str, Sample]]) -> None:
        watched = self.watched.get(cell_id, ())
        shown = [(n, s) for n, s in found if n in watched] or found[:3]
        kind, step = found[0][1].kind, found[0][1].step
        values = ", ".join(f"{n}={s.value:g}" for n, s in shown)
        self.console.print(
            f"{cell_id}: {kind} {step}: {values}", highlight=False, markup=False, soft_wrap=True
        )

    def finished(self, result: CellResult) -> None:
        """The full reasons, once: the summary at the end repeats only the first."""
        text = Text(f"{result.id}: {result.status.value}", style=STYLES[result.status])
        found = reasons(result) if result.reason else []
        earlier = self.said.setdefault(tuple(found), result.id) if found else result.id
        if earlier != result.id:  # the cells of one spec share their requirements
            count = f"{len(found)} reasons" if len(found) > 1 else "reason"
            text.append(f" — the same {count} as {earlier}")
            found = []
        elif len(found) == 1:
            text.append(f" — {found[0]}")
        self.console.print(text, soft_wrap=True)
        for reason in found if len(found) > 1 else ():
            self.console.print(Text(f"  - {reason}"), soft_wrap=True)

    def close(self) -> None:
        pass


COLUMNS = (("phase", 12), ("elapsed", 5), ("step", 4), ("key metrics", 12), ("last line", 12))  # least widths


class LiveView:
    """A board that redraws itself four times a second."""

    def __init__(self, console: Console) -> None:
        self.console = console  # its width is read at each redraw: terminals get resized
        self.rows: dict[str, _Row] = {}
        self.live = Live(self, console=console, refresh_per_second=4, transient=False)
        self.live.start()

    def __rich__(self) -> Table:
        table = Table(box=None, pad_edge=False)
        # a cell id is never cut (``rocm/gl…`` names nothing); the other columns give way, last first
        id_width = max(map(len, self.rows), default=4)
        table.add_column("cell", no_wrap=True, min_width=id_width)
        room = self.console.width - id_width
        for column, least in COLUMNS:
            room -= least + 2
            if room < 0:
                break
            table.add_column(column, overflow="ellipsis", no_wrap=True, max_width=60)
        for cell_id, row in self.rows.items():
            table.add_row(*self._cells(cell_id, row)[: len(table.columns)])
        return table

    @staticmethod
    def _cells(cell_id: str, row: _Row) -> tuple[Text | str, ...]:
        status = row.result.status if row.result else None
        phase = Text(status.value if status else row.phase, style=STYLES[status] if status else "")
        elapsed = row.result.seconds if row.result else time.monotonic() - row.started
        # Text: cell ids and log lines hold brackets that are not markup
        return (Text(cell_id), phase, f"{elapsed:.0f} s", row.step, row.key_metrics(), Text(row.last_line))

    def started(self, cell_id: str, watched: tuple[str, ...]) -> None:
        self.rows[cell_id] = _Row(watched)

    def phase(self, cell_id: str, text: str) -> None:
        self.rows[cell_id].phase = printable(text)

    def output(self, cell_id: str, line: str) -> None:
        if line.strip():  # a line of the job's log, echoed: its escape codes never reach the terminal
            self.rows[cell_id].last_line = printable(line.strip())

    def metrics(self, cell_id: str, found: list[tuple[str, Sample]]) -> None:
        row = self.rows[cell_id]
        for name, sample in found:
            row.values[name] = sample.value
            if sample.kind == "step":
                row.step = str(sample.step)

    def finished(self, result: CellResult) -> None:
        self.rows.setdefault(result.id, _Row(())).result = result

    def close(self) -> None:
        self.live.stop()
