"""port: a spec's cells -> the overlay (and components) that move them to another hardware profile.

``rules`` decides the changes (miles/porting.yaml), ``files`` writes them as text, ``refit``
proposes other parallelism for a smaller node or for GPUs that hold less (rule P10; where none
fits, the numbers become TODOs), and ``reasons`` restates inherited reasons whose numbers a
re-fit changed. :func:`port` chains them: every candidate is composed and validated in
memory (the pipeline reads the texts as documents), nothing is written; the caller writes the
texts it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from runner import check, pipeline
from runner.cells.cell import Cell
from runner.errors import Problem, SpecError
from runner.port.files import PortFiles, texts
from runner.port.reasons import stale_reasons
from runner.port.refit import refits
from runner.port.rules import Change, PortPlan, after_refit, plan, porting
from schemas import HardwareProfile

MAX_REFITS = 500  # candidates validated before a re-fit gives up
MEMORY_RULE = "P10"  # a cell that cannot fit its GPUs' memory

__all__ = ["MAX_REFITS", "Change", "PortPlan", "Ported", "port"]


@dataclass(frozen=True)
class Ported:
    steps: PortPlan
    files: PortFiles
    texts: dict[Path, str]  # the overlay first, then the components
    extra: tuple[Change, ...]  # the re-fit's changes and their follow-ups
    problems: list[Problem]  # every problem of the ported cells, each once
    caused: list[Problem]  # those the port brought (not a TODO, not the source's own)


def port(cells: list[Cell], source: Path, target: HardwareProfile, out: Path) -> Ported:
    """Port every cell of ``source`` to ``target`` as the overlay ``out``; re-fit literal
    parallelism when the plain port does not validate and the target's nodes are smaller or a cell
    cannot fit its GPUs' memory; a cell no re-fit fits gets its P10's numbers as TODOs."""
    steps = plan(cells, target, porting())
    candidate = _Candidate(steps, source, PortFiles.of(steps, out))
    problems, refit = candidate.problems(()), tuple[Change, ...]()
    smaller = target.gpus_per_node < cells[0].spec.cluster.gpus_per_node
    if _errors(problems) and (smaller or _unfit(problems)):
        problems, refit = _refit(candidate, _default(cells), target, grow=not smaller)
    extra = _followups(candidate, _default(cells), refit)
    if extra != refit:
        problems = candidate.problems(extra)
    if _unfit(problems):  # no layout fits the memory: the numbers go to the reviewer as TODOs
        steps = replace(steps, todo={**steps.todo, **_memory_todos(problems)})
        candidate = _Candidate(steps, source, candidate.files)
        problems = candidate.problems(extra)
    caused = _caused(problems, cells)
    return Ported(steps, candidate.files, candidate.texts(extra), extra, problems, caused)


@dataclass(frozen=True)
class _Candidate:
    """The port's files with some extra changes, built by the pipeline from memory."""

    steps: PortPlan
    source: Path
    files: PortFiles

    def texts(self, extra: tuple[Change, ...]) -> dict[Path, str]:
        return texts(self.steps, self.source, self.files, extra)

    def cells(self, extra: tuple[Change, ...]) -> list[Cell]:
        documents = {path.resolve(): text for path, text in self.texts(extra).items()}
        return pipeline.cells(self.files.overlay, documents=documents)

    def problems(self, extra: tuple[Change, ...]) -> list[Problem]:
        """Every cell's problems, each once (cells of one matrix share most of them)."""
        try:
            found = [p for cell in self.cells(extra) for p in check.run(cell)]
        except SpecError as exc:
            found = list(exc.problems)
        return list(dict.fromkeys(found))


def _refit(
    candidate: _Candidate, default: Cell, target: HardwareProfile, grow: bool
) -> tuple[list[Problem], tuple[Change, ...]]:
    """The first re-fit, fewest changes first, that validates; else the plain port's problems.
    ``grow``: the node is as large but its GPUs hold less, so larger parallel sizes are tried too."""
    for tried, extra in enumerate(refits(default, target, porting().refit_flags, grow)):
        if tried >= MAX_REFITS:
            break
        problems = candidate.problems(extra)
        if not _errors(problems):
            return problems, extra
    return candidate.problems(()), ()


def _followups(candidate: _Candidate, default: Cell, refit: tuple[Change, ...]) -> tuple[Change, ...]:
    """After a re-fit: the flags it made pointless, then the source's reasons whose numbers it changed."""
    extra = refit
    if refit:
        extra = (*extra, *after_refit(_default(candidate.cells(extra)), candidate.steps.target, porting()))
    written = {c.dotted for c in (*candidate.steps.common, *extra)}
    return (*extra, *stale_reasons(default, _default(candidate.cells(extra)), written))


def _caused(problems: list[Problem], cells: list[Cell]) -> list[Problem]:
    """Warnings the port brought (a TODO, G6, is a question it asks on purpose)."""
    before = {(p.rule, p.key) for cell in cells for p in check.run(cell)}
    return [p for p in problems if p.rule != "G6" and (p.rule, p.key) not in before]


def _default(cells: list[Cell]) -> Cell:
    return next(c for c in cells if "[" not in c.id)


def _unfit(problems: list[Problem]) -> bool:
    """Whether a cell cannot fit its GPUs' memory (P10)."""
    return any(p.rule == MEMORY_RULE and p.severity == "error" for p in problems)


def _memory_todos(problems: list[Problem]) -> dict[str, str]:
    """A TODO at each key a P10 names, with its numbers: no re-fit of the literal flags fits."""
    return {
        (p.key or "hardware"): f"no re-fit fits the memory: {p.message}"
        for p in problems
        if p.rule == MEMORY_RULE and p.severity == "error"
    }


def _errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)
