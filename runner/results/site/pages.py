"""The pages: parity (index.html), streaks and flaky cells, the budget, and one page per cell."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runner.errors import counted
from runner.results.coverage import Entry, Row
from runner.results.site.budget import Budget
from runner.results.site.chart import chart
from runner.results.site.facts import KIND_WORDS, Flips, Streak, kind
from runner.results.site.markup import Content, Markup, element, page, table
from runner.results.site.parity import Parity, Skip
from runner.results.site.records import Point, Run

CELLS = "cells"  # the folder of the cell pages


def cell_file(cell: str) -> str:
    """A file name for any cell id, hostile ones too: its safe letters and a digest of the whole."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", cell).strip("-.")[:80] or "cell"
    return f"{CELLS}/{safe}-{hashlib.sha256(cell.encode()).hexdigest()[:10]}.html"


@dataclass(frozen=True)
class Gated:
    metric: str
    points: tuple[Point, ...]
    low: float | None = None  # the spec's min
    high: float | None = None  # the spec's max


@dataclass(frozen=True)
class CellView:
    """What a cell's page shows beyond its runs."""

    cell: str
    hardware: str = ""
    launch: str = ""  # the rendered launch, as shell text ("" when the cell is in no spec given)
    sibling: str = ""  # its cell on the other platform
    diff: tuple[str, ...] = ()  # the launch's unified diff against the sibling's
    gated: tuple[Gated, ...] = ()
    runs: tuple[Run, ...] = ()
    streak: Streak = field(default_factory=lambda: Streak(0, None))
    flips: Flips = field(default_factory=lambda: Flips(0, 0, 10, "", False))
    bisections: Mapping[str, tuple[Run, ...]] = field(default_factory=dict)


def _status(run: Run | None) -> Markup:
    if run is None:
        return element("span", "no runs", class_="muted")
    found = kind(run)
    word = run.status if found in ("passed", "none") else f"{run.status} ({KIND_WORDS[found]})"
    return element("span", word, class_=found)


def _link(cell: str, depth: int = 0) -> Markup:
    return element("a", cell, href="../" * depth + cell_file(cell))


def parity_page(found: Parity, hardware: Sequence[str], views: Sequence[CellView] = ()) -> str:
    shares = [
        _glance(views),
        element("h2", "Tests that run, per vendor and hardware"),
        table(
            ["", "tests that run", "share"],
            [
                [s.name, f"{s.running} of {s.tests}", f"{s.percent:.0f}%"]
                for s in (*found.vendors, *found.hardware)
            ],
            class_="shares",
        ),
    ]
    rows = [
        [_test_name(row, found), *(_entry(row.entries.get(h, Entry()), found) for h in hardware)]
        for row in found.rows
    ]
    grid = [element("h2", "Each test on each hardware"), _rows_table(["test", *hardware], rows, found)]
    return page("run-matrix: parity", [*shares, *grid, *_skips(found), *_refused(found)])


def _refused(found: Parity) -> list[Markup]:
    if not found.refused:
        return []
    rows = [
        [element("code", r.spec), element("span", "expired skip", class_="expired") if r.expired else "error",
         element("pre", r.message)]
        for r in found.refused
    ]  # fmt: skip
    return [element("h2", "Specs that do not build"), table(["spec", "why", "message"], rows, "refused")]


def _glance(views: Sequence[CellView]) -> Markup:
    """One line first: which cells fail now, which are flaky, each linked to its page."""
    failing = [v.cell for v in views if v.streak.runs]
    flaky = [v.cell for v in views if v.flips.flaky]
    streaks = element("a", "streaks", href="flaky.html")
    said = [f"{counted(len(views), 'cell')}; failing now: ", *_listed(failing), "; flaky: ", *_listed(flaky)]
    said += [" (", streaks, ")"]
    return element("p", said, class_="glance")


def _listed(cells: Sequence[str]) -> list[Content]:
    if not cells:
        return ["none"]
    found: list[Content] = []
    for index, cell in enumerate(cells):
        found += [", "] if index else []
        found.append(_link(cell))
    return found


def _rows_table(head: Sequence[str], rows: Sequence[Sequence[Content]], found: Parity) -> Markup:
    body = []
    for row, cells in zip(found.rows, rows, strict=True):
        split = (row.test, row.variant) in found.split
        body.append(
            element("tr", [element("td", value) for value in cells], class_="split" if split else None)
        )
    header = element("tr", [element("th", name) for name in head])
    return element("table", element("thead", header), element("tbody", body), class_="parity")


def _test_name(row: Row, found: Parity) -> Markup:
    name = element("code", row.test + (f" [{row.variant}]" if row.variant else ""))
    if (row.test, row.variant) in found.split:
        return Markup(name + element("div", "passes on one platform, fails on another", class_="failed"))
    return name


def _entry(entry: Entry, found: Parity) -> Markup:
    if entry.status == "missing":
        return element("span", "missing", class_="muted")
    cells = [element("div", _link(c), " ", _status(found.latest.get(c))) for c in entry.cells]
    reasons = element("div", "; ".join(entry.reasons), class_="muted") if entry.reasons else None
    return element("div", element("b", entry.status), cells, reasons)


def _skips(found: Parity) -> list[Markup]:
    if not found.skips:
        return []
    rows = [
        [
            _link(s.cell), s.hardware, s.reason,
            element("a", s.issue, href=s.issue) if _is_web(s.issue) else s.issue,
            _expiry(s),
        ]
        for s in found.skips
    ]  # fmt: skip
    return [
        element("h2", "Skipped cells"),
        table(["cell", "hardware", "reason", "issue", "expires"], rows, "skips"),
    ]


def _expiry(skip: Skip) -> Content:
    if skip.expired:
        return element("span", f"{skip.expires} (expired)", class_="expired")
    return str(skip.expires or "")


def _is_web(link: str) -> bool:
    """Only an http or https address becomes a link: never ``javascript:`` or a ``data:`` URL from a spec."""
    return re.match(r"https?://[^\s\"'<>]+$", link) is not None


def flaky_page(views: Sequence[CellView], window: int, threshold: int) -> str:
    ordered = sorted(views, key=lambda v: (not v.flips.flaky, -v.streak.runs, v.cell))
    rows = [
        element(
            "tr",
            [
                element("td", _link(v.cell)),
                element("td", _status(v.runs[-1] if v.runs else None)),
                element("td", v.streak.describe()),
                element("td", v.flips.describe()),
                element("td", f"{v.flips.rate:.0%}"),
                element("td", element("b", "flaky") if v.flips.flaky else "no"),
                element("td", _kinds(v.runs[-v.flips.window :])),
            ],
            class_="flaky" if v.flips.flaky else None,
        )
        for v in ordered
    ]
    head = ["cell", "latest", "failure streak", "flips", "flip rate", "flaky", "failures in the window"]
    header = element("tr", [element("th", name) for name in head])
    rule = element(
        "p",
        f"A cell is flaky when at least {threshold} of its last {window} runs with a verdict, at the content "
        "hash of its newest run, changed verdict (pass to fail, or back). An infra failure (exit 3, a "
        "preflight or prepare step, a timeout) gives no verdict, so it never flips one; a failure streak "
        "counts it, told apart.",
        class_="muted",
    )
    return page(
        "run-matrix: streaks and flaky cells",
        [rule, element("table", element("thead", header), element("tbody", rows), class_="flaky-table")],
    )


def _kinds(runs: Sequence[Run]) -> str:
    seen: dict[str, int] = {}
    for run in runs:
        found = kind(run)
        if found in ("gate", "job", "infra"):
            seen[KIND_WORDS[found]] = seen.get(KIND_WORDS[found], 0) + 1
    return ", ".join(counted(n, word) for word, n in sorted(seen.items())) or "none"


def budget_page(found: Budget) -> str:
    limit = f"{found.limit:g} GPU-hours a week" if found.limit is not None else "no budget given"
    weeks = [
        [
            week,
            f"{hours:.2f}",
            element("span", "over budget", class_="failed") if week in found.over() else "",
        ]
        for week, hours in found.weeks
    ]
    spent = [[s.week, s.suite, s.hardware, str(s.runs), f"{s.gpu_hours:.2f}"] for s in found.spent]
    notes = [element("p", f"budget: {limit}")]
    if found.unknown:
        notes.append(
            element(
                "p",
                f"{counted(found.unknown, 'run')} of cells no spec given names: their GPUs are unknown, "
                "left out",
                class_="muted",
            )
        )
    return page(
        "run-matrix: GPU budget",
        [*notes, table(["week", "GPU-hours", ""], weeks, "weeks"), element("h2", "Per suite and hardware"),
         table(["week", "suite", "hardware", "runs", "GPU-hours"], spent, "spent")],
    )  # fmt: skip


def cell_page(view: CellView) -> str:
    summary = table(
        ["latest", "failure streak", "flips", "flaky"],
        [[_status(view.runs[-1] if view.runs else None), view.streak.describe(), view.flips.describe(),
          "flaky" if view.flips.flaky else "no"]],
        "summary",
    )  # fmt: skip
    charts = [element("h2", "Gated metrics"), *(chart(g.metric, g.points, g.low, g.high) for g in view.gated)]
    if not view.gated:
        charts.append(element("p", "no gated metric recorded", class_="muted"))
    parts: list[Content] = [summary, charts, element("h2", "Runs"), _runs(view.runs)]
    parts += _bisections(view)
    parts += [
        element("h2", "Launch"),
        element("pre", view.launch or "not in the specs given", class_="launch"),
    ]
    if view.sibling:
        lines: list[Content] = [Markup(element("span", t, class_=_diff_class(t)) + "\n") for t in view.diff]
        parts += [
            element("h2", "Diff against ", _link(view.sibling, 1)),
            element("pre", lines or "the same launch", class_="diff"),
        ]
    return page(f"cell {view.cell}", parts, depth=1)


def _runs(runs: Sequence[Run]) -> Markup:
    rows = [
        [r.id, f"{r.recorded_at:%Y-%m-%d %H:%M}", _status(r), "yes" if r.trusted else f"no ({r.note})",
         r.miles_commit[:12], "" if r.seconds is None else f"{r.seconds:.0f} s", r.stack]
        for r in reversed(runs)
    ]  # fmt: skip
    return table(["run", "recorded", "status", "trusted", "miles commit", "duration", "stack"], rows, "runs")


def _bisections(view: CellView) -> list[Content]:
    """The hook of issue 56: the attempts of each bisection, where the store's rows name one."""
    if not view.bisections:
        return []
    found: list[Content] = [element("h2", "Bisections")]
    for name, runs in view.bisections.items():
        found += [element("h3", f"bisection {name}"), _runs(runs)]
    return found


def _diff_class(line: str) -> str | None:
    if line.startswith(("+++", "---")):
        return "muted"
    return {"+": "add", "-": "del"}.get(line[:1])
