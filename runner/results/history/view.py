"""The runs of one cell as a rich table: when, status, trust, the metric, its reference and corridor."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from runner.errors import counted
from runner.results.history.checks import printable
from runner.results.history.reads import Point

_VERDICT_STYLES = {"pass": "green", "fail": "bold red", "inactive": "dim", "error": "red"}


_COLUMNS = ("run", "recorded", "status", "value", "step", "reference", "corridor", "gate")


def table(cell: str, metric: str, points: Sequence[Point]) -> Table:
    runs = counted(len(points), "run")
    # the store's text as Text, never markup, and escaped: a cell id may hold "[" or an ESC
    title = Text(
        f"{printable(cell)}: {printable(metric)}, {runs}" if metric else f"{printable(cell)}: {runs}"
    )
    shown = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    rows = [_row(p) for p in points]
    for index, column in enumerate(_COLUMNS):  # these keep their width; the trust note folds
        width = max([len(column), *(len(row[index]) for row in rows)])
        numeric = column in ("value", "step", "reference", "corridor")
        shown.add_column(column, no_wrap=True, min_width=width, justify="right" if numeric else "left")
    shown.add_column("trusted", overflow="fold")
    for index, (p, row) in enumerate(zip(points, rows, strict=True)):
        if index and p.stack != points[index - 1].stack:  # the step: a new stack is a new baseline
            step = f"stack {printable(p.stack) or '(unknown)'}: a new baseline (cold start)"
            shown.add_row(*[Text("")] * len(_COLUMNS), Text(step, style="bold yellow"))
        gate = Text(row[-1], style=_VERDICT_STYLES.get(p.verdict, ""))
        shown.add_row(*map(Text, row[:-1]), gate, Text("yes" if p.trusted else f"no: {printable(p.note)}"))
    return shown


def _row(p: Point) -> tuple[str, ...]:
    return (
        printable(p.run),
        p.recorded_at.strftime("%m-%d %H:%M"),
        printable(p.status),
        _number(p.value),
        "" if p.at_step is None else str(p.at_step),
        _number(p.reference),
        f"[{p.low:.6g}, {p.high:.6g}]" if p.low is not None and p.high is not None else "",
        printable(p.verdict),
    )


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
