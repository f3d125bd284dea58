"""``history recommend --write``: each recommended band into the ``expect:`` of the spec file its cell
comes from, with a ``why:`` beside it that cites the figures it came from (``Recommendation.why``).

A spec is edited in place (``runner.spec.edit``: its comments and layout kept), checked in memory before
anything is written — the cell composed from the new text must have the band and keep its content
hash, by which the history keys the runs the band was learned from — and the files are written all
together or not at all, never through a link (``runner.atomic``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner import atomic, pipeline
from runner.errors import Collector, Location, SpecError, display_path, printable
from runner.spec import edit, load, why
from runner.spec.emit import flow
from runner.spec.paths import read_text

if TYPE_CHECKING:
    from runner.cells.cell import Cell
    from runner.results.history.recommend import Recommendation


@dataclass(frozen=True)
class Written:
    """One band written: where, for which cell and metric."""

    path: Path
    line: int | None
    cell: str
    metric: str

    def __str__(self) -> str:
        where = f"{display_path(self.path)}:{self.line}" if self.line else display_path(self.path)
        return f"{where}: expect.{printable(self.metric)}.band of {printable(self.cell)}, with its why:"

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "line": self.line, "cell": self.cell, "metric": self.metric}


def write(found: Sequence[tuple[Cell, Sequence[Recommendation]]]) -> list[Written]:
    """Write every band of ``found`` into its cell's spec; each file is checked before any is written."""
    chosen: dict[Path, list[tuple[Cell, Recommendation]]] = {}
    for cell, recommended in found:
        chosen.setdefault(cell.path, []).extend((cell, r) for r in recommended if r.band)
    texts: dict[Path, str] = {}
    written: list[Written] = []
    for path, bands in chosen.items():
        if bands:
            texts[path], lines = _edited(path, bands)
            written += [Written(path, lines.get(r.metric), cell.id, r.metric) for cell, r in bands]
    atomic.write_all(texts)
    return written


def _edited(path: Path, bands: list[tuple[Cell, Recommendation]]) -> tuple[str, dict[str, int | None]]:
    atomic.refuse_link(path)  # before reading: the spec is edited where it is, never where a link points
    _one_cell(path, bands[0][0])
    text = read_text(path)
    edits: list[edit.Edit] = []
    for cell, r in bands:
        band = ("expect", r.metric, "band")
        edits.append((band, dict(r.band)))
        if r.metric not in cell.spec.expect:  # a new gate judges what the band was learned from
            edits.append((("expect", r.metric, "steps"), "last"))
        edits.append((("why", load.dotted(band)), r.why()))
    hint = "write the band by hand: " + "; ".join(f"expect.{r.metric}.band: {flow(r.band)}" for _, r in bands)
    text = edit.edited(text, path, edits, hint)
    document = load.loads(text, path)
    for cell, r in bands:
        _check(path, text, document, cell, r, hint)
    return text, {r.metric: document.lines.get(("expect", r.metric, "band")) for _, r in bands}


def _one_cell(path: Path, cell: Cell) -> None:
    """A spec has one ``expect:`` for all its cells: a band learned from one cell's runs would gate the
    others too."""
    cells = pipeline.cells(path, miles_root=cell.miles_root)
    if len(cells) > 1:
        line = load.load(path).lines.get(("matrix",))
        raise SpecError.one(
            "edit",
            f"the spec expands into {len(cells)} cells, which share its expect:, and the band was learned "
            f"from the runs of {printable(cell.id)} alone: not written",
            key="matrix",
            at=[Location(path, line)],
            hint="put the band in an overlay that a matrix adjust: applies to this cell only",
        )


def _check(path: Path, text: str, document: load.Document, cell: Cell, r: Recommendation, hint: str) -> None:
    """The cell composed from ``text`` has the band, the reason, and the content hash it had."""
    key = ("expect", r.metric, "band")
    problem = ""
    if why.reasons(document, Collector()).get(load.dotted(key)) != r.why():
        problem = "its why: entry would not explain it (another why: does, or the name reads as several keys)"
    else:
        now = pipeline.cells(path, miles_root=cell.miles_root, documents={path.resolve(): text})
        found = next((c for c in now if c.id == cell.id), None)
        band = found.spec.expect.get(r.metric) if found is not None else None
        if band is None or band.band is None or band.band.model_dump() != r.band:
            problem = "the cell would not have the band (something after the spec's expect: sets it)"
        elif found is not None and found.content_hash != cell.content_hash:
            problem = (
                "the cell's content hash would change, and with it the history the band was learned from"
            )
    if problem:
        at = [Location(path, document.lines.get(key))]
        raise SpecError.one("edit", f"{problem}: not written", key=load.dotted(key), at=at, hint=hint)
