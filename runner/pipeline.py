"""The pipeline in one place: a spec's text composed (``spec/``), its cells built (``cells/``), then
checked (``check/``); ``launch/`` renders what this returns and ``run/`` runs it.

``cells(path)`` is the chain; ``select`` is how every command names its cells, each input (the
``--miles-root`` checkout, the day) given once for all of them. Nothing here runs anything.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path

from runner import check
from runner.cells import build, selection
from runner.cells.build import Inputs, in_hardware, spec_files
from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.errors import Problem, SpecError, UsageError
from runner.memos import memo
from runner.spec import locate, why
from runner.spec.compose import Composed, compose
from runner.spec.load import NO_DOCUMENTS, Documents


def cells(
    path: Path,
    today: datetime.date | None = None,
    miles_root: Path | None = None,
    documents: Documents = NO_DOCUMENTS,
) -> list[Cell]:
    """Every cell of one spec file: its matrix expanded, each cell resolved and modelled; its flags
    are checked against ``miles_root``'s own when given (else the spec's miles_version). Files of
    ``documents`` (the spec, its components) are read from there: candidates not written yet."""
    return of(path, Inputs(today or datetime.date.today(), miles_root, documents))


def of(path: Path, inputs: Inputs) -> list[Cell]:
    """The chain: compose the spec, build its cells, then check what holds across them (rule G9: what
    a cell reads at launch, an earlier cell writes). Each cell's own rules run in ``problems``."""
    try:
        composed = compose(path, inputs.documents)
    except SpecError as error:
        raise _unknown_flags_first(error, path, inputs) from None
    return _checked_across(composed, locate.cell_name(path), inputs)


def _checked_across(composed: Composed, name: str, inputs: Inputs) -> list[Cell]:
    built = build.cells(composed, name, inputs)
    unwritten = check.across(built)
    if unwritten:
        raise SpecError(unwritten)
    return built


MAX_TYPO_SEARCH = 32  # why: problems of unset keys under which the pipeline looks for misspelt flags


def _unknown_flags_first(error: SpecError, path: Path, inputs: Inputs) -> SpecError:
    """A ``why:`` that names a flag its file does not set is most often the reason of a flag the file
    misspelt (``sglang-dp-sise: 2`` under ``why: sglang-dp-size: ...``): composed without that check,
    the spec's flags that are no flags (rule F1, with did-you-mean) come first, then the why problem."""
    unset = [p for p in error.problems if p.rule == "why" and why.UNSET in p.message]
    if not unset or len(unset) > MAX_TYPO_SEARCH:
        return error  # none, or more than typos: composing again would cost what the first one did
    try:
        unchecked = compose(path, inputs.documents, reasons_checked=False)
        found = _checked_across(unchecked, locate.cell_name(path), inputs)
    except SpecError:
        return error  # the spec has other problems: the why one stands alone
    unknown = [p for c in found for p in check.RULES["F1"](c, layout(c)) if p.severity == "error"]
    return SpecError([*dict.fromkeys(unknown), *error.problems]) if unknown else error


def cell(path: Path) -> Cell:
    """The spec's default cell: the one named like the spec (every axis at its first value)."""
    found = cells(path)
    name = locate.cell_name(path)
    for each in found:
        if each.id == name:
            return each
    raise UsageError(f"{path} has no default cell {name!r}; its cells: {', '.join(c.id for c in found)}")


def checked(path: Path) -> tuple[Cell, list[Problem]]:
    """A one-cell spec and the warnings of its rules (errors raise)."""
    built = cell(path)
    return built, problems(built)


def problems(built: Cell) -> list[Problem]:
    """The problems the rules find in a cell: errors raise, warnings are returned."""
    found = [*built.notes, *check.run(built)]
    if any(p.severity == "error" for p in found):
        raise SpecError(found)
    return found


def select(
    names: Sequence[str],
    expression: str | None = None,
    broken: list[tuple[Path, SpecError]] | None = None,
    miles_root: Path | None = None,
) -> list[Cell]:
    """The cells named by spec paths, folders or cell ids, then filtered by ``-k``.

    Every command selects through here. With ``broken``, a spec that does not expand is
    collected there (``validate`` reports it with the rest) instead of raised. With
    ``miles_root``, that checkout's own flags decide which flags are valid.
    """
    chosen: list[Cell] = []
    inputs = Inputs(miles_root=miles_root)  # one for every spec named: what their cells share is read once
    with memo():  # the tree is only read here: each path resolved once
        for name in names:
            spec_name, bracket, _ = name.partition("[")
            for path in spec_files([locate.find_spec(spec_name)]):
                try:
                    found = of(path, inputs)
                except SpecError as exc:
                    if broken is None:
                        raise
                    broken.append((path, exc))
                    continue
                chosen += [selection.by_id(found, name)] if bracket else found
            _not_a_profile(spec_name, broken is not None)
    if expression is not None and (chosen or not broken):
        chosen = selection.select(chosen, expression)
    return chosen


def _not_a_profile(name: str, validating: bool) -> None:
    """A hardware profile named where a spec is meant: ``validate`` checks it as a profile, any other
    command says what it is rather than finding no cell in it."""
    path = locate.find_spec(name)
    if not validating and path.is_file() and in_hardware(path):
        raise UsageError(
            f"{name} is a hardware profile, not a spec: `run-matrix validate {name}` checks it,"
            f" `run-matrix hardware {path.stem}` shows it"
        )


def one(name: str, miles_root: Path | None = None) -> Cell:
    """The cell ``name`` means: a cell id, or a spec (its default cell when it has several)."""
    found = select([name], miles_root=miles_root)
    if len(found) == 1:
        return found[0]
    default = [c for c in found if "[" not in c.id]
    if len(default) == 1:
        return default[0]
    raise UsageError(f"{name!r} has {len(found)} cells; name one: {', '.join(c.id for c in found)}")
