"""The runs of one cell as a rich table: when, status, trust, the metric, its reference and corridor."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from runner.history.query import Point

_VERDICT_STYLES = {"pass": "green", "fail": "bold red", "inactive": "dim", "error": "red"}


def table(cell: str, metric: str, points: Sequence[Point]) -> Table:
    shown = Table(title=f"{cell}: {len(points)} run{'s' if len(points) != 1 else ''}", title_justify="left")
    for column in ("run", "recorded (UTC)", "status", "trusted", "hash", "miles"):
        shown.add_column(column, no_wrap=True)
    for column in (metric or "metric", "step", "reference", "corridor", "gate"):
        shown.add_column(column, no_wrap=True, justify="right" if column != "gate" else "left")
    for p in points:
        shown.add_row(
            p.run,
            p.recorded_at.strftime("%Y-%m-%d %H:%M:%S"),
            p.status,
            Text("yes") if p.trusted else Text(f"no: {p.note}", style="dim"),
            p.content_hash,
            p.miles_commit[:8] or "-",
            _number(p.value),
            "" if p.at_step is None else str(p.at_step),
            _number(p.reference),
            f"[{p.low:.6g}, {p.high:.6g}]" if p.low is not None and p.high is not None else "",
            Text(p.verdict, style=_VERDICT_STYLES.get(p.verdict, "")),
        )
    return shown


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
