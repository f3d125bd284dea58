"""est_time of a cell: measured (the history store) before declared (the spec) before guessed."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.errors import EnvironmentProblem, UsageError, display_path
from schemas.ci_plan import EstSource, PlannedCell

DEFAULT_EST_TIME = 600  # seconds: a typical miles e2e test (its register_*_ci est_time values)
HISTORY_URL = (
    "RUN_MATRIX_HISTORY_URL"  # runner.results.history.location.ENV, without importing the store's stack
)
HISTORY_RUNS = 5  # est_time from history: the mean of this many last passed runs


def est_time(cell: Cell, durations: Sequence[float] = ()) -> tuple[int, EstSource]:
    """The mean of the cell's recorded durations, else ``ci.est_time``, else its timeout, else 600 s."""
    if durations:
        return max(1, math.ceil(sum(durations) / len(durations))), "history"
    if cell.spec.ci.est_time is not None:
        return cell.spec.ci.est_time, "spec"
    if cell.timeout is not None:
        return cell.timeout, "timeout"
    return DEFAULT_EST_TIME, "default"


def planned_cell(
    cell: Cell, durations: Mapping[str, Sequence[float]], changed: Sequence[str] = ()
) -> PlannedCell:
    seconds, source = est_time(cell, durations.get(cell.id, ()))
    gpus = layout(cell).cluster_gpus
    attempts = 1 + cell.spec.retry.infra
    return PlannedCell(
        id=cell.id,
        spec=display_path(cell.path),
        hardware=cell.profile.name,
        gpus=gpus,
        est_time=seconds,
        est_source=source,
        content_hash=cell.content_hash,
        ci=cell.spec.ci,
        attempts=attempts,
        gpu_hours=round(seconds * gpus * attempts / 3600, 4),
        changed=list(changed),
    )


def recorded(option: str | None, environ: Mapping[str, str], cells: list[str]) -> dict[str, list[float]]:
    """Each cell's last recorded durations in the store ``--history`` (else ``$RUN_MATRIX_HISTORY_URL``)
    names; none without either."""
    if not option and not environ.get(HISTORY_URL):
        return {}  # `list` and `coverage` pass no environment: they never load the store's stack
    from runner.results.history.location import ENV, parse

    location = (
        parse(option, "--history", from_command_line=True)
        if option
        else parse(environ[ENV], f"${ENV}", from_command_line=False)
    )
    try:
        from runner.results.history.query import durations
        from runner.results.history.store import Store
    except ImportError as exc:
        raise EnvironmentProblem(
            f"the history store needs {exc.name}: pip install 'run-matrix[run]'"
        ) from None
    if location.sqlite_file is not None and not location.sqlite_file.exists():
        named = "--history" if option else f"${ENV}"
        raise UsageError(f"{named} {location.shown}: no such file (a history store `run` wrote)")
    store = Store.open_existing(location)  # a plan only reads: it never creates nor migrates a store
    if store is None:
        return {}
    try:
        return durations(store, cells, HISTORY_RUNS)
    finally:
        store.close()
