"""One metric over a cell's runs as inline SVG: the values, the band's corridor, the fixed bounds. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from runner.results.site.markup import Markup, element, escape
from runner.results.site.records import Point

WIDTH, HEIGHT, PAD = 640, 220, 44
_COLOURS = {"fail": "#b3261e", "error": "#b3261e", "inactive": "#8891a0"}
_LINE = "#2f5fb3"


@dataclass(frozen=True)
class _Scale:
    """Run index and value to the drawing's coordinates."""

    count: int
    bottom: float
    top: float

    def x(self, index: int) -> float:
        return PAD + (WIDTH - 2 * PAD) * (index / (self.count - 1) if self.count > 1 else 0.5)

    def y(self, value: float) -> float:
        return HEIGHT - PAD + (value - self.bottom) / (self.top - self.bottom) * (2 * PAD - HEIGHT)


def chart(metric: str, points: Sequence[Point], low: float | None, high: float | None) -> Markup:
    """``low``/``high``: the spec's fixed bounds (``min``/``max``), drawn as dashed lines."""
    values = [p.value for p in points if p.value is not None and math.isfinite(p.value)]
    if not values:
        return element("p", f"{metric}: no finite value recorded", class_="muted")
    corridor = [v for p in points for v in (p.low, p.high) if v is not None and math.isfinite(v)]
    bounds = [b for b in (low, high) if b is not None and math.isfinite(b)]
    bottom, top = min(values + corridor + bounds), max(values + corridor + bounds)
    scale = _Scale(len(points), bottom - 1 if top == bottom else bottom, top + 1 if top == bottom else top)
    parts = [
        _band(points, scale),
        *(_bound(n, b, scale) for n, b in (("min", low), ("max", high)) if b is not None),
    ]
    drawn = [(i, p.value) for i, p in enumerate(points) if p.value is not None and math.isfinite(p.value)]
    line = " ".join(f"{scale.x(i):.1f},{scale.y(v):.1f}" for i, v in drawn)
    parts.append(Markup(f'<polyline points="{line}" fill="none" stroke="{_LINE}" stroke-width="1.5"/>'))
    for index, value in drawn:
        verdict = points[index].verdict
        tip = element("title", f"run {points[index].run}: {value:.6g}" + (f" ({verdict})" if verdict else ""))
        at = {"cx": f"{scale.x(index):.1f}", "cy": f"{scale.y(value):.1f}"}
        parts.append(element("circle", tip, **at, r="3.5", fill=_COLOURS.get(verdict, _LINE)))
    parts += [_label(f"{scale.top:.4g}", 4, PAD + 4), _label(f"{scale.bottom:.4g}", 4, HEIGHT - PAD + 4)]
    legend = "shaded: the band's corridor; dashed: the spec's bounds; red: a gate failed"
    parts.append(_label(f"{len(points)} runs, oldest to newest. {legend}", PAD, HEIGHT - 12))
    return element(
        "svg", element("title", metric), parts, xmlns="http://www.w3.org/2000/svg", role="img",
        viewBox=f"0 0 {WIDTH} {HEIGHT}", width=str(WIDTH), height=str(HEIGHT), class_="chart",
        data_metric=metric,
    )  # fmt: skip


def _band(points: Sequence[Point], scale: _Scale) -> Markup:
    """The corridor as one shaded polygon over the runs that had one."""
    judged = [
        (i, p.low, p.high)
        for i, p in enumerate(points)
        if p.low is not None and p.high is not None and math.isfinite(p.low) and math.isfinite(p.high)
    ]
    if not judged:
        return Markup("")
    upper = [f"{scale.x(i):.1f},{scale.y(high):.1f}" for i, _, high in judged]
    lower = [f"{scale.x(i):.1f},{scale.y(low):.1f}" for i, low, _ in reversed(judged)]
    shape = " ".join(upper + lower)
    return Markup(
        f'<polygon class="band" points="{shape}" fill="#2e8540" fill-opacity="0.15" stroke="none"/>'
    )


def _bound(name: str, value: float, scale: _Scale) -> Markup:
    at = scale.y(value)
    ends = f'x1="{PAD}" x2="{WIDTH - PAD}" y1="{at:.1f}" y2="{at:.1f}"'
    line = f'<line class="bound" {ends} stroke="#b3261e" stroke-dasharray="5,4"/>'
    return Markup(line + _label(f"{name} {value:.4g}", WIDTH - PAD + 2, at + 4))


def _label(text: str, at_x: float, at_y: float) -> Markup:
    return Markup(f'<text x="{at_x:.1f}" y="{at_y:.1f}" font-size="10" fill="#445">{escape(text)}</text>')
