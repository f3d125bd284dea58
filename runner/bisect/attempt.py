"""attempt: the cell at one commit — its tree written out, the cell rendered for it, run as ``run``
runs a cell, and judged by the same gates; what that attempt tells the bisection.

A commit's tree is written to a folder of its own (``run-matrix-bisect-*`` in the temp folder) by the
checkout's door, so its flags, presets and launch conventions are that commit's; the folder is
removed once the commit has its verdict. An attempt the environment spoiled (an error of Ray, a
preflight that fails, a timeout, a requirement this machine does not meet) tells ``env``, never
``fail``: only the cell's own failure may make a commit bad.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from runner import pipeline
from runner.bisect.search import Outcome
from runner.errors import EnvironmentProblem, UsageError, display_path
from runner.knowledge.checkout import Tree, revisions
from runner.launch.checkout import launch_context, observer
from runner.launch.planned import Planned
from runner.launch.render import render
from runner.results.history.recorder import Recorder
from runner.results.outcome import CellResult, Sample, Status
from runner.run import lifecycle
from runner.run.cell_run import cell_result
from runner.run.outputs import Outputs, make_log_dir
from runner.run.plan import Options, job_name
from runner.run.record import new_run_id


@dataclass(frozen=True)
class Settings:
    """What every attempt of a bisection shares: how ``run`` would run the cell, and the gate that decides."""

    ray_address: str | None
    log_dir: Path  # each attempt logs below it, in a folder named after its commit and number
    timeout: float | None = None
    skip_prepare: bool = False
    preflight: bool = True
    miles_check: bool = True
    miles_python: Path | None = None
    trust_checkout: bool = False
    metric: str = ""  # "" every check and gate decides; else only this metric's (and the job's exit)


@dataclass(frozen=True)
class Tried:
    """One attempt: what it told the bisection, why, and the run id the history store gave it."""

    outcome: Outcome
    reason: str
    history: str = ""
    values: tuple[float, ...] = ()  # the decisive metric's series (--metric), for the answer


@contextmanager
def tree_of(checkout: Tree, commit: str) -> Iterator[Path]:
    """Commit ``commit``'s files in a folder of their own, removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="run-matrix-bisect-"))
    root = scratch / "miles"
    try:
        root.mkdir()
        revisions.write_tree(checkout, commit, root)
        yield root
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def planned(cell: str, root: Path, trust: bool) -> Planned:
    """The cell rendered for the commit whose files are at ``root``: SpecError when it does not
    validate there (with that commit's flags, presets and conventions)."""
    found = pipeline.select([cell], miles_root=root)
    if len(found) != 1:
        names = ", ".join(c.id for c in found[:5])
        raise UsageError(f"bisect {cell}: {len(found)} cells ({names}): name one, by its cell id")
    built = found[0]
    warnings = pipeline.problems(built)
    context, drift = launch_context(built, os.environ, trust, observer([built]))
    spec = display_path(built.path)
    launch = render(built, context)
    return Planned(built, launch, spec, f"run-matrix bisect {spec}", (*warnings, *drift))


def attempt(each: Planned, root: Path, settings: Settings, recorder: Recorder, name: str) -> Tried:
    """Run the cell once, as ``run`` runs it, and record the attempt (``name`` names its log folder)."""
    options = Options(
        miles_root=root,
        ray_address=settings.ray_address,
        log_dir=settings.log_dir / name,
        run_id=new_run_id(),
        caller_env=dict(os.environ),
        skip_prepare=settings.skip_prepare,
        preflight=settings.preflight,
        miles_check=settings.miles_check,
        miles_python=settings.miles_python,
        trust_checkout=settings.trust_checkout,
        timeout=settings.timeout,
    )
    try:
        make_log_dir(options.log_dir, [job_name(each.cell.id)])
        finished = lifecycle.run([each], options, Outputs(()), Quiet(), _nothing, recorder)
    except EnvironmentProblem as exc:  # preflight, Ray: before the cell ran
        result = recorder.record(each, cell_result(each, Status.ERROR, str(exc), ()))
        return Tried("env", str(exc), result.history)
    (result,) = finished.result.cells
    if result.status is Status.INTERRUPTED:
        raise KeyboardInterrupt(result.reason)
    outcome = told(result, settings.metric)
    values = tuple(s.value for s in result.metrics.get(settings.metric, ())) if settings.metric else ()
    return Tried(outcome, result.reason, result.history, values)


def told(result: CellResult, metric: str = "") -> Outcome:
    """What a cell's result tells a bisection: ``pass``, ``fail`` (the cell's own failure, or with
    ``metric``: the job's, or that metric's check or gate), or ``env`` (it could not run here)."""
    last = result.attempts[-1].outcome if result.attempts else ""
    if result.status in (Status.ERROR, Status.SKIPPED, Status.INTERRUPTED) or last in ("timeout", "infra"):
        return "env"
    if result.status in (Status.PASSED, Status.XFAIL):
        return "pass"
    if not metric or last != "succeeded":
        return "fail"  # a prepare step or the job failed: no metric can be judged
    checked = any(c.metric == metric and not c.ok for c in result.checks)
    gated = any(g.metric == metric and g.fails for g in result.gates)
    return "fail" if checked or gated else "pass"


def recorder_for(recorder: Recorder, commit: str, metric: str) -> Recorder:
    """The bisection's recorder for attempts at ``commit``: that commit, and what each result tells."""
    return replace(recorder, miles_commit=commit, told=lambda result: told(result, metric))


def _nothing(text: str) -> None:
    """What the run would say of earlier runs it cleaned up: the attempt's own line says enough."""


class Quiet:
    """The live view of an attempt: none; ``bisect`` prints one line an attempt."""

    def started(self, cell_id: str, watched: tuple[str, ...]) -> None: ...
    def phase(self, cell_id: str, text: str) -> None: ...
    def output(self, cell_id: str, line: str) -> None: ...
    def metrics(self, cell_id: str, found: list[tuple[str, Sample]]) -> None: ...
    def finished(self, result: CellResult) -> None: ...
    def close(self) -> None: ...
