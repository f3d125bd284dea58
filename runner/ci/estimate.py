"""est_time of a cell: measured (the history store) before declared (the spec) before guessed."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from runner.cell import Cell
from runner.errors import display_path
from runner.layout import layout
from schemas.ci_plan import EstSource, PlannedCell

DEFAULT_EST_TIME = 600  # seconds: a typical miles e2e test (its register_*_ci est_time values)


def est_time(cell: Cell, durations: Sequence[float] = ()) -> tuple[int, EstSource]:
    """The mean of the cell's recorded durations, else ``ci.est_time``, else its timeout, else 600 s."""
    if durations:
        return max(1, math.ceil(sum(durations) / len(durations))), "history"
    if cell.spec.ci.est_time is not None:
        return cell.spec.ci.est_time, "spec"
    if cell.timeout is not None:
        return cell.timeout, "timeout"
    return DEFAULT_EST_TIME, "default"


def planned_cell(cell: Cell, durations: Mapping[str, Sequence[float]]) -> PlannedCell:
    seconds, source = est_time(cell, durations.get(cell.id, ()))
    return PlannedCell(
        id=cell.id,
        spec=display_path(cell.path),
        hardware=cell.profile.name,
        gpus=layout(cell).cluster_gpus,
        est_time=seconds,
        est_source=source,
        content_hash=cell.content_hash,
        ci=cell.spec.ci,
    )
