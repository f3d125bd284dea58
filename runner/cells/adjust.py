"""adjust: what a matrix's ``adjust:`` entries do to one cell. Pure.

An entry applies overlay files, or sets ``skip``, ``xfail`` or ``timeout``, on the cells its
partial ``match`` selects. Overlays are chosen on axis values (they change what resolves);
skips, xfails and timeouts are decided on the resolved cell, so ``match`` may also name its
keys (``profile.vendor: amd``, ``hardware``, ``args.misc.colocate``). Later entries win.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner.cells.matrix import Combo, same, show
from runner.errors import SpecError, did_you_mean
from runner.spec import repository
from runner.spec.compose import Composed, overlay
from runner.spec.load import NO_DOCUMENTS, Documents, is_document, walk
from runner.spec.paths import readable_file
from schemas import HardwareProfile, Spec
from schemas.matrix import Adjust, Matrix, Skip

Named = tuple[str, Adjust]
_AXIS_REFERENCE = re.compile(r"\$\{matrix\.([A-Za-z_][\w-]*)\}")


def applicable(matrix: Matrix, combo: Combo, composed: Composed) -> list[Named]:
    """The entries with overlays that select this cell (their match names axes only)."""
    chosen = []
    for name, entry in matrix.adjust.items():
        if not entry.overlay:
            continue
        others = [key for key in entry.match if key not in matrix.axes]
        if others:
            raise SpecError.one(
                "matrix",
                f"adjust {name!r} applies an overlay but matches on {', '.join(others)},"
                " which is not an axis",
                key=f"matrix.adjust.{name}.match",
                at=[composed.location(("matrix", "adjust", name, "match"))],
                hint="overlays are chosen on axis values; match resolved values only to skip,"
                " xfail or time out",
            )
        if same(combo, entry.match):
            chosen.append((name, entry))
    return chosen


def with_overlays(
    composed: Composed, chosen: list[Named], combo: Combo, documents: Documents = NO_DOCUMENTS
) -> Composed:
    for name, entry in chosen:
        where = composed.location(("matrix", "adjust", name, "overlay"))
        for template in entry.overlay:
            filled = _fill(template, combo, composed, name)
            path = where.file.parent / filled
            key = f"matrix.adjust.{name}.overlay"
            repository.check_inside(composed.path, path, where, key, str(filled))
            if not is_document(path, documents):
                readable_file(path, where, f"matrix.adjust.{name}.overlay", str(filled))
            try:
                composed = overlay(composed, path, documents)
            except SpecError as exc:  # a problem in the overlay also names the line that applied it
                raise SpecError([replace(p, via=(*p.via, where)) for p in exc.problems]) from None
    return composed


def control(
    matrix: Matrix,
    combo: Combo,
    spec: Spec,
    profile: HardwareProfile,
    composed: Composed,
    today: datetime.date,
    cell: str,
) -> tuple[Skip | None, str | None, int | None]:
    """The cell's skip, xfail and timeout; an expired skip is an error."""
    skip, xfail, timeout = None, None, None
    if not any(entry.skip or entry.xfail or entry.timeout for entry in matrix.adjust.values()):
        return skip, xfail, timeout
    values = {**dict(walk(spec.model_dump(mode="python"))), **_profile_keys(profile)}
    for name, entry in matrix.adjust.items():
        if not _matches(entry, combo, values, matrix, composed, name):
            continue
        skip = entry.skip or skip
        xfail = entry.xfail or xfail
        timeout = entry.timeout or timeout
        if entry.skip and entry.skip.expires and entry.skip.expires < today:
            raise SpecError.one(
                "skip-expired",
                f"the skip of {cell} expired on {entry.skip.expires}: {entry.skip.reason}",
                key=f"matrix.adjust.{name}.skip.expires",
                at=[composed.location(("matrix", "adjust", name, "skip", "expires"))],
                hint="fix the cell and delete the skip, or renew it with a later expires: date",
            )
    return skip, xfail, timeout


def _matches(
    entry: Adjust, combo: Combo, values: dict[Any, Any], matrix: Matrix, composed: Composed, name: str
) -> bool:
    for key, wanted in entry.match.items():
        if key in matrix.axes:
            if not same(combo, {key: wanted}):
                return False
            continue
        path = tuple(key.split("."))
        if path not in values:
            raise SpecError.one(
                "matrix",
                f"adjust {name!r} matches on {key!r}, which is neither an axis nor a key of the cell",
                key=f"matrix.adjust.{name}.match.{key}",
                at=[composed.location(("matrix", "adjust", name, "match"))],
                hint=did_you_mean(key, [*matrix.axes, *(".".join(k) for k in values)]),
            )
        if values[path] != wanted:
            return False
    return True


def _profile_keys(profile: HardwareProfile) -> dict[tuple[str, ...], Any]:
    return {("profile", *key): value for key, value in walk(profile.model_dump(mode="python"))}


def _fill(template: str, combo: Combo, composed: Composed, name: str) -> Path:
    def axis(match: re.Match[str]) -> str:
        if match.group(1) not in combo:
            raise SpecError.one(
                "matrix",
                f"overlay path {template!r} refers to {match.group(1)!r}, which is not an axis",
                key=f"matrix.adjust.{name}.overlay",
                at=[composed.location(("matrix", "adjust", name, "overlay"))],
                hint=did_you_mean(match.group(1), combo),
            )
        return show(combo[match.group(1)])

    return Path(_AXIS_REFERENCE.sub(axis, template))
