"""What the history says of a cell's gates: the trusted values a band is recommended from, and the
gates that cannot fail (a fixed bound looser than 10x anything recorded, a band whose floor is wider
than the recorded range, a band that never had a baseline). Reads through ``reads.Reader`` (no
SQLAlchemy); the statistics are ``recommend``'s."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runner.errors import counted
from runner.results.history import checks
from runner.results.history.gates import LAST

if TYPE_CHECKING:
    from runner.results.history.location import Location
    from runner.results.history.reads import Reader
    from schemas.run import Expectation

LOOSE = 10.0  # a fixed bound further than this from anything recorded lets a 10x regression pass


@dataclass(frozen=True)
class Trusted:
    """The trusted runs a band would be judged against: their identity and values per coordinate."""

    content_hash: str = ""
    hardware: str = ""
    stack: str = ""
    values: Mapping[int, list[float]] | None = None


def trusted(reader: Reader, cell: str, metric: str, selection: object, last: int) -> Trusted:
    """The values of ``metric`` at each coordinate of ``selection`` over the last ``last`` trusted
    runs sharing the newest trusted run's content hash, hardware and stack (a non-finite value: nan)."""
    where = reader.location.shown
    newest = reader.rows("newest_trusted", cell=cell)
    if not newest:
        return Trusted(values={})
    run = checks.Row(newest[0], where, f"a run of {checks.printable(cell)}")
    found = Trusted(run.text("content_hash"), run.text("hardware"), run.text("stack"), {})
    keys = {"content_hash": found.content_hash, "hardware": found.hardware, "stack": found.stack}
    values: dict[int, list[float]] = {}
    for row in reader.rows("trusted_series", cell=cell, metric=metric, last=last, **keys):
        sample = checks.Row(row, where, f"a sample of {checks.printable(metric)}")
        step, value = sample.integer("step"), sample.real("value")
        if selection == "last":
            if not sample.flag("last"):
                continue
            step = LAST
        elif isinstance(selection, list) and step not in selection:
            continue
        values.setdefault(step, []).append(math.nan if value is None else value)
    return Trusted(found.content_hash, found.hardware, found.stack, values)


def cannot_fail(reader: Reader, cell: str, expect: Mapping[str, Expectation]) -> list[tuple[str, str]]:
    """(metric, why) for each gate of ``expect`` the history says cannot fail."""
    found: list[tuple[str, str]] = []
    for metric, expectation in expect.items():
        extent = _extent(reader, cell, metric)
        if extent is not None:
            found += [(metric, why) for why in _loose_bounds(expectation, extent)]
        if expectation.band is not None:
            found += [(metric, why) for why in _idle_band(reader, cell, metric, expectation, extent)]
    return found


def _extent(reader: Reader, cell: str, metric: str) -> dict[str, float] | None:
    rows = reader.rows("extent", cell=cell, metric=metric)
    if not rows:
        return None
    row = checks.Row(rows[0], reader.location.shown, f"the range of {checks.printable(metric)}")
    if not row.integer("count"):
        return None
    return {key: row.real(key) or 0.0 for key in ("low", "high", "largest")} | {"count": row.integer("count")}


def _loose_bounds(expectation: Expectation, extent: Mapping[str, float]) -> list[str]:
    largest, count = extent["largest"], int(extent["count"])
    seen = f"the largest |value| of {counted(count, 'recorded sample')} is {largest:.6g}"
    found = []
    for name, bound in (("max", expectation.max), ("min", expectation.min)):
        if bound is None or largest == 0:
            continue
        if abs(bound) > LOOSE * largest:
            found.append(
                f"{name}: {bound:g} is more than {LOOSE:g}x anything recorded ({seen}): a {LOOSE:g}x "
                f"regression passes; tighten it (`history recommend` proposes a band)"
            )
    return found


def _idle_band(
    reader: Reader, cell: str, metric: str, expectation: Expectation, extent: Mapping[str, float] | None
) -> list[str]:
    band = expectation.band
    assert band is not None
    rows = reader.rows("most_baseline", cell=cell, metric=metric)
    most = checks.Row(rows[0], reader.location.shown, "a gate").optional_integer("most") if rows else None
    found = []
    if not most:
        found.append("its band never had a baseline: every recorded gate was a cold start (inactive)")
    if extent is not None:
        spread = extent["high"] - extent["low"]
        floor = min(band.abs_floor_up, band.abs_floor_down)
        if floor > spread:
            found.append(
                f"its band's floor ({floor:g}) exceeds the recorded range [{extent['low']:.6g}, "
                f"{extent['high']:.6g}]: no value seen so far could leave it"
            )
    return found


def warnings_for(reader: Reader, cells: list[Any]) -> list[dict[str, Any]]:
    """``validate --history``'s and ``run``'s warnings: each gate of each cell that cannot fail."""
    found = []
    for cell in cells:
        for metric, why in cannot_fail(reader, cell.id, cell.spec.expect):
            message = f"{checks.printable(cell.id)}: expect.{checks.printable(metric)}: {why}"
            found.append({"cell": cell.id, "metric": metric, "message": message})
    return found


def warnings_at(location: Location, cells: list[Any]) -> list[dict[str, Any]]:
    """``warnings_for`` on the store at ``location``, opened read-only for the while."""
    from runner.results.history.reads import Reader

    reader = Reader.open(location)
    try:
        return warnings_for(reader, cells)
    finally:
        reader.close()
