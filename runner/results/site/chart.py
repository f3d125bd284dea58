"""One metric over a cell's runs as inline SVG: the values, the band's corridor, the fixed bounds. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

from runner.results.site.markup import Markup, element, escape
from runner.results.site.records import Point

WIDTH, HEIGHT, PAD = 640, 220, 44
_COLOURS = {"fail": "#b3261e", "error": "#b3261e", "inactive": "#8891a0"}


def chart(metric: str, points: Sequence[Point], low: float | None, high: float | None) -> Markup:
    """``low``/``high``: the spec's fixed bounds (``min``/``max``), drawn as dashed lines."""
    values = [p.value for p in points if p.value is not None and math.isfinite(p.value)]
    if not values:
        return element("p", f"{metric}: no finite value recorded", class_="muted")
    corridor = [v for p in points for v in (p.low, p.high) if v is not None and math.isfinite(v)]
    bounds = [b for b in (low, high) if b is not None and math.isfinite(b)]
    bottom, top = min(values + corridor + bounds), max(values + corridor + bounds)
    if top == bottom:
        bottom, top = bottom - 1, top + 1
    count = len(points)

    def x(index: int) -> float:
        return PAD + (WIDTH - 2 * PAD) * (index / (count - 1) if count > 1 else 0.5)

    def y(value: float) -> float:
        return HEIGHT - PAD + (value - bottom) / (top - bottom) * (2 * PAD - HEIGHT)

    parts = [_band(points, x, y), *(_bound(name, b, y) for name, b in (("min", low), ("max", high)) if b is not None)]
    line = " ".join(f"{x(i):.1f},{y(p.value):.1f}" for i, p in enumerate(points) if _finite(p.value))
    parts.append(Markup(f'<polyline points="{line}" fill="none" stroke="#2f5fb3" stroke-width="1.5"/>'))
    for index, p in enumerate(points):
        if _finite(p.value):
            assert p.value is not None
            colour = _COLOURS.get(p.verdict, "#2f5fb3")
            tip = element("title", f"run {p.run}: {p.value:.6g}" + (f" ({p.verdict})" if p.verdict else ""))
            parts.append(
                element("circle", tip, cx=f"{x(index):.1f}", cy=f"{y(p.value):.1f}", r="3.5", fill=colour)
            )
    parts += [_label(f"{top:.4g}", 4, PAD + 4), _label(f"{bottom:.4g}", 4, HEIGHT - PAD + 4)]
    parts.append(_label(f"{count} runs, oldest to newest", PAD, HEIGHT - 12))
    return element(
        "svg", element("title", metric), parts, xmlns="http://www.w3.org/2000/svg", role="img",
        viewBox=f"0 0 {WIDTH} {HEIGHT}", width=str(WIDTH), height=str(HEIGHT), class_="chart",
        data_metric=metric,
    )  # fmt: skip


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _band(points: Sequence[Point], x: object, y: object) -> Markup:
    """The corridor as one shaded polygon over the runs that had one."""
    assert callable(x) and callable(y)
    judged = [(i, p) for i, p in enumerate(points) if _finite(p.low) and _finite(p.high)]
    if not judged:
        return Markup("")
    upper = [f"{x(i):.1f},{y(p.high):.1f}" for i, p in judged]
    lower = [f"{x(i):.1f},{y(p.low):.1f}" for i, p in reversed(judged)]
    shape = " ".join(upper + lower)
    return Markup(f'<polygon class="band" points="{shape}" fill="#2e8540" fill-opacity="0.15" stroke="none"/>')


def _bound(name: str, value: float, y: object) -> Markup:
    assert callable(y)
    at = f"{y(value):.1f}"
    line = f'<line class="bound" x1="{PAD}" x2="{WIDTH - PAD}" y1="{at}" y2="{at}" stroke="#b3261e" stroke-dasharray="5,4"/>'
    return Markup(line + _label(f"{name} {value:.4g}", WIDTH - PAD + 2, float(at) + 4))


def _label(text: str, at_x: float, at_y: float) -> Markup:
    return Markup(f'<text x="{at_x:.1f}" y="{at_y:.1f}" font-size="10" fill="#445">{escape(text)}</text>')
