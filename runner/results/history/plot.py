"""plot: one metric over the runs of a cell, with the corridor it was judged against.

The terminal plot is plotext's; the PNG and the HTML page (an inline SVG and the runs table) are
matplotlib's. Both come with the ``history`` extra and are imported only when a plot is drawn.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner import atomic
from runner.errors import EnvironmentProblem
from runner.results.history.checks import printable
from runner.results.history.reads import Point


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise EnvironmentProblem(
            f"{module} is not installed; plots need the history extra: pip install 'run-matrix[history]'"
        ) from None


def _xs(points: Sequence[Point]) -> list[int]:
    return list(range(1, len(points) + 1))


def _series(points: Sequence[Point], attribute: str) -> tuple[list[int], list[float]]:
    pairs = [
        (x, getattr(p, attribute))
        for x, p in zip(_xs(points), points, strict=True)
        if getattr(p, attribute) is not None
    ]
    return [x for x, _ in pairs], [float(v) for _, v in pairs]


def terminal(points: Sequence[Point], cell: str, metric: str, width: int = 100, height: int = 20) -> str:
    """The plot as plain text (no colour codes: it goes to CI logs too)."""
    fig = _need("plotext").figure
    fig.clear()
    fig.plot_size(width, height)
    for attribute, label, marker in (
        ("low", "corridor", "-"),
        ("high", None, "-"),
        ("reference", "reference", "."),
    ):
        xs, ys = _series(points, attribute)
        if xs:
            line = fig.signal(xs, ys, marker=marker)
            line.lines()
            if label:
                line.label(label)
            fig.draw(line)
    for keep, label, marker in ((True, "trusted", "o"), (False, "not trusted", "x")):
        chosen = [
            (x, p.value)
            for x, p in zip(_xs(points), points, strict=True)
            if p.trusted == keep and p.value is not None
        ]
        if chosen:
            dots = fig.signal([x for x, _ in chosen], [v for _, v in chosen], marker=marker)
            dots.label(label)
            fig.draw(dots)
    fig.title(f"{printable(cell)}: {printable(metric)} over the last {len(points)} runs")
    fig.label("run (oldest to newest)", axis="x")
    text: str = fig.build().string(colorless=True)
    return text


def figure(points: Sequence[Point], cell: str, metric: str) -> Any:
    _need("matplotlib").use("Agg")
    pyplot = _need("matplotlib.pyplot")
    fig, axes = pyplot.subplots(figsize=(9, 4.5), dpi=100)
    xs = _xs(points)
    corridor = [
        (x, p.low, p.high)
        for x, p in zip(xs, points, strict=True)
        if p.low is not None and p.high is not None
    ]
    if corridor:
        axes.fill_between(
            [c[0] for c in corridor], [c[1] for c in corridor], [c[2] for c in corridor],
            color="tab:green", alpha=0.15, step="mid", label="corridor",
        )  # fmt: skip
        ref_x, ref_y = _series(points, "reference")
        axes.plot(ref_x, ref_y, color="tab:green", linestyle="--", label="reference (baseline mean)")
    for keep, label, style in ((True, "trusted", "o"), (False, "not trusted", "x")):
        chosen = [
            (x, p.value) for x, p in zip(xs, points, strict=True) if p.trusted == keep and p.value is not None
        ]
        if chosen:
            axes.plot([c[0] for c in chosen], [c[1] for c in chosen], style, label=label)
    axes.set_title(f"{cell}: {metric}")
    axes.set_xlabel("run (oldest to newest)")
    axes.set_ylabel(metric)
    axes.set_xticks(xs, [p.run[:6] for p in points], rotation=45, fontsize=7)
    axes.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def png(points: Sequence[Point], cell: str, metric: str, path: Path) -> None:
    fig = figure(points, cell, metric)
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        atomic.write_bytes(path, buffer.getvalue())  # never through a link planted there
    except OSError as exc:
        raise EnvironmentProblem(f"--png {path}: {exc.strerror or exc}") from None
    finally:
        _need("matplotlib.pyplot").close(fig)


def html_page(sections: Sequence[tuple[str, str, Sequence[Point]]], path: Path) -> None:
    """One section per cell: the plot as inline SVG, then the runs."""
    parts = [
        "<!doctype html><meta charset='utf-8'><title>run-matrix history</title>",
        "<h1>run-matrix history</h1>",
    ]
    for cell, metric, points in sections:
        fig = figure(points, cell, metric)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
        _need("matplotlib.pyplot").close(fig)
        parts += [f"<h2>{html.escape(cell)}: {html.escape(metric)}</h2>", buffer.getvalue(), _table(points)]
    try:
        atomic.write_text(path, "\n".join(parts) + "\n")
    except OSError as exc:
        raise EnvironmentProblem(f"--html {path}: {exc.strerror or exc}") from None


def _table(points: Sequence[Point]) -> str:
    columns = ("run", "recorded", "miles", "status", "trusted", "value", "reference", "corridor", "verdict")
    head = "<tr>" + "".join(f"<th>{name}</th>" for name in columns) + "</tr>"
    rows = [
        "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>"
        for row in (_row(p) for p in points)
    ]
    return f"<table border='1' cellspacing='0' cellpadding='3'>{head}{''.join(rows)}</table>"


def _row(p: Point) -> tuple[str, ...]:
    corridor = f"[{p.low:.6g}, {p.high:.6g}]" if p.low is not None and p.high is not None else ""
    value = "" if p.value is None else f"{p.value:.6g}"
    reference = "" if p.reference is None else f"{p.reference:.6g}"
    when = p.recorded_at.strftime("%Y-%m-%d %H:%M:%S")
    # a bisection's attempts each ran another miles commit: the page shows which
    return (
        p.run,
        when,
        p.miles_commit[:12] + (f" (bisection {p.bisection})" if p.bisection else ""),
        p.status,
        "yes" if p.trusted else f"no ({p.note})",
        value,
        reference,
        corridor,
        p.verdict,
    )
