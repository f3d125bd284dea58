"""The run's summary on stderr: one line per cell in a log, a table on a terminal.

A CI log is not a terminal and is read top to bottom: each cell's full reasons were
printed when it finished (``view.PlainView``), so the summary repeats only the first,
on one line. On a terminal a table fits the window: cell ids are never wrapped or cut,
reasons are cut with an ellipsis (the log and the reports keep the full text).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from runner.errors import printable
from runner.results.outcome import CellResult, RunResult
from runner.results.report import headline
from runner.run.view import STYLES, reasons

NARROW = 100  # below this a table's why column is too thin to read; lines instead


def print_summary(console: Console, result: RunResult) -> None:
    if console.is_terminal and console.width >= NARROW:
        console.print(table(result, console.width))
    else:
        for line in lines(result, console.width):
            console.print(line, soft_wrap=True, highlight=False)
    for note in result.notes:  # whole: a reason cut short would not say why
        console.print(Text(f"run-matrix: {printable(note, lines=True)}"), soft_wrap=True, highlight=False)


def lines(result: RunResult, width: int) -> list[Text]:
    """``run-matrix: 2 skipped in 0 s``, then ``skipped  0 s  <id>  <first reason>`` per cell."""
    status_width = max((len(c.status.value) for c in result.cells), default=0)
    time_width = max((len(_time(c)) for c in result.cells), default=0)
    out = [Text(f"run-matrix: {headline(result)}")]
    for cell in result.cells:
        line = Text()
        line.append(cell.status.value.ljust(status_width), style=STYLES[cell.status])
        line.append(f"  {_time(cell).rjust(time_width)}  {cell.id}")
        found = reasons(cell)
        if found:
            more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
            line.append("  " + _shorten(found[0], width - len(line) - 2 - len(more)) + more)
        out.append(line)
    return out


def table(result: RunResult, width: int) -> Table:
    summary = Table(title=f"run-matrix: {headline(result)}", title_justify="left", width=width)
    id_width = max((len(c.id) for c in result.cells), default=4)
    summary.add_column("cell", no_wrap=True, min_width=id_width)
    for column in ("status", "time", "attempts"):
        summary.add_column(column, no_wrap=True)
    summary.add_column("why", no_wrap=True, overflow="ellipsis", ratio=1)
    for cell in result.cells:
        found = reasons(cell)
        why = found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else "") if found else ""
        summary.add_row(
            Text(cell.id),  # Text: a cell id's [axis=value] is not markup
            Text(cell.status.value, style=STYLES[cell.status]),
            _time(cell),
            str(len(cell.attempts)),
            Text(why),
        )
    return summary


def _time(cell: CellResult) -> str:
    return f"{cell.seconds:.0f} s"


def _shorten(text: str, room: int) -> str:
    """Cut to ``room`` characters with an ellipsis; never below a readable stub."""
    if len(text) <= room:
        return text
    return text[: max(room - 1, 24)] + "…"
