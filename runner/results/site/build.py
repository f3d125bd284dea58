"""The site as ``{file name: text}``: the cells of the specs given, the history store's runs, and
what the pages say of them. Pure but for rendering each cell's launch, which reads no checkout."""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.errors import RunMatrixError, display_path
from runner.results.coverage import Row, coverage
from runner.results.site import budget, facts, pages, parity
from runner.results.site.records import History, Point, Run


@dataclass(frozen=True)
class Options:
    today: datetime.date
    window: int = facts.FLAKY_WINDOW  # --flaky-runs
    flips: int = facts.FLAKY_FLIPS  # --flaky-flips
    budget_gpu_hours: float | None = None  # a week's


@dataclass(frozen=True)
class Site:
    files: Mapping[str, str]  # file name under the site's folder -> its text
    runs: int
    flaky: tuple[str, ...]  # the cells named flaky
    failing: tuple[tuple[str, int], ...]  # the cells whose newest runs failed, and how many in a row


def site(
    cells: Sequence[Cell],
    vendors: Mapping[str, str],
    history: History,
    options: Options,
    redact: Callable[[str], str],
    refused: Sequence[parity.Refused] = (),
) -> Site:
    """``vendors``: each hardware profile's vendor, in the order of the parity table's columns;
    ``redact``: what every rendered launch passes through (no secret of the environment in a page)."""
    rows = coverage(cells, list(vendors))
    skips = [_skip(cell, options.today) for cell in cells if cell.skip]
    found = parity.parity(rows, vendors, history.runs, skips, refused)
    views = _views(cells, history, options, redact, _siblings(rows, vendors))
    gpus = {cell.id: layout(cell).cluster_gpus for cell in cells}
    suites = {cell.id: cell.spec.ci.suite or _label(cell) for cell in cells}
    spent = budget.budget(history.runs, gpus, suites, options.budget_gpu_hours)
    files = {
        "index.html": pages.parity_page(found, list(vendors), views),
        "flaky.html": pages.flaky_page(views, options.window, options.flips),
        "budget.html": pages.budget_page(spent),
    }
    files.update({pages.cell_file(view.cell): pages.cell_page(view) for view in views})
    flaky = tuple(v.cell for v in views if v.flips.flaky)
    failing = tuple((v.cell, v.streak.runs) for v in views if v.streak.runs)
    return Site(files, len(history.runs), flaky, failing)


def _views(
    cells: Sequence[Cell],
    history: History,
    options: Options,
    redact: Callable[[str], str],
    siblings: Mapping[str, str],
) -> list[pages.CellView]:
    """A page's worth of each cell of the specs or the store, by id."""
    by_cell: dict[str, list[Run]] = {}
    for run in history.runs:
        by_cell.setdefault(run.cell, []).append(run)
    series: dict[str, dict[str, tuple[Point, ...]]] = {}
    for (cell, metric), points in history.series.items():
        series.setdefault(cell, {})[metric] = points
    known = {cell.id: cell for cell in cells}
    launches = {cell.id: redact(_launch(cell)) for cell in cells}
    return [
        _view(name, known.get(name), by_cell.get(name, []), series.get(name, {}), options, launches,
              siblings.get(name, ""))
        for name in sorted(set(known) | set(by_cell))
    ]  # fmt: skip


def _label(cell: Cell) -> str:
    runs_on = cell.spec.ci.runs_on
    return ",".join(runs_on) if isinstance(runs_on, list) else (runs_on or "")


def _skip(cell: Cell, today: datetime.date) -> parity.Skip:
    assert cell.skip is not None
    expires = cell.skip.expires
    return parity.Skip(
        cell.id,
        cell.profile.name,
        cell.skip.reason,
        cell.skip.issue or "",
        expires,
        parity.expired(expires, today),
    )


def _launch(cell: Cell) -> str:
    from runner.launch.render import render
    from runner.launch.script import to_shell

    try:
        return to_shell(render(cell), display_path(cell.path), programs=False)
    except RunMatrixError as exc:
        return f"(not rendered: {exc})"


def _siblings(rows: Sequence[Row], vendors: Mapping[str, str]) -> dict[str, str]:
    """Each cell's sibling: the first cell of its test on a hardware of another vendor."""
    found: dict[str, str] = {}
    for row in rows:
        placed = [(vendors.get(h, h), c) for h, entry in row.entries.items() for c in entry.cells]
        for vendor, cell in placed:
            other = next((c for v, c in placed if v != vendor), None)
            if other is not None:
                found[cell] = other
    return found


def _view(
    name: str,
    cell: Cell | None,
    runs: list[Run],
    recorded: Mapping[str, tuple[Point, ...]],
    options: Options,
    launches: Mapping[str, str],
    sibling: str,
) -> pages.CellView:
    launch = launches.get(name, "")
    other = launches.get(sibling, "").splitlines()
    diff = (
        tuple(difflib.unified_diff(launch.splitlines(), other, name, sibling, lineterm="")) if sibling else ()
    )
    bisections: dict[str, list[Run]] = {}
    for run in runs:
        if run.bisection:
            bisections.setdefault(run.bisection, []).append(run)
    return pages.CellView(
        name, cell.profile.name if cell else (runs[-1].hardware if runs else ""), launch, sibling, diff,
        _gated(cell, recorded), tuple(runs), facts.streak(runs),
        facts.flips(runs, options.window, options.flips), {k: tuple(v) for k, v in bisections.items()},
    )  # fmt: skip


def _gated(cell: Cell | None, recorded: Mapping[str, tuple[Point, ...]]) -> tuple[pages.Gated, ...]:
    """Every metric a band judged in the store or the spec bounds: its series, the spec's min and max."""
    expect = cell.spec.expect if cell else {}
    banded = {m for m, points in recorded.items() if any(p.low is not None for p in points)}
    chosen = sorted(banded | set(expect))
    return tuple(
        pages.Gated(m, recorded.get(m, ()), expect[m].min if m in expect else None,
                    expect[m].max if m in expect else None)
        for m in chosen
    )  # fmt: skip
