"""repository: which files a spec may draw on without a word, and keeping the others' values quiet.

A spec's repository is the folder that holds its ``matrices/`` (the folder above the one with
``hardware/``), or the output folder of the import that wrote it (it holds ``locate.ROOT_MARKER``),
else the spec's own folder and what lies below it; run-matrix's own bundled files
count as its too. ``extends:`` of a file elsewhere (``/etc/...``, another user's home, a mounted
share) still composes — a team may keep bases in a shared folder — but is a warning that names the
file (rule G14), and no error or warning ever quotes a value of such a file: its strings are
replaced in every message by where they come from (:func:`quiet`). A spec handed over by someone
else cannot so make run-matrix copy a host file's content into a terminal, a CI log or a report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from runner.errors import Problem, SpecError
from runner.memos import resolved
from runner.spec import locate
from runner.spec.load import load, walk

MIN_QUOTED = 3  # shorter strings (true, 1, on) say nothing of a file; they are not replaced


def root(spec: Path) -> Path:
    """The spec's repository: the folder holding its matrices folder (an import's output folder: that
    folder itself), else the spec's folder."""
    matrices = locate.matrices_root(spec)
    if matrices is None:
        return resolved(spec.parent)
    return resolved(matrices if locate.marked_root(matrices) else matrices.parent)


def outside(spec: Path, file: Path) -> bool:
    """Whether ``file`` lies outside the spec's repository and run-matrix's own files."""
    where = resolved(file)
    return not any(where.is_relative_to(folder) for folder in (root(spec), resolved(locate.PROJECT)))


def outside_files(spec: Path, files: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(f for f in files if outside(spec, f))


def quiet(error: SpecError, spec: Path, files: Iterable[Path]) -> SpecError:
    """``error`` with every string value of the outside files among ``files`` replaced."""
    problems = quiet_problems(list(error.problems), spec, files)
    return SpecError(problems) if problems != list(error.problems) else error


def quiet_problems(problems: list[Problem], spec: Path, files: Iterable[Path]) -> list[Problem]:
    """``problems`` with the values of the outside files among ``files`` replaced — but never text the
    user wrote: a value that the spec's own files or any file's path also hold is theirs to see."""
    files = tuple(files)
    strange = outside_files(spec, files)
    if not strange:
        return problems
    own = "\n".join([*map(str, files), *_values(tuple(f for f in files if f not in strange))])
    values = {value: file for value, file in _values(strange).items() if value not in own}
    if not values:
        return problems
    pattern = re.compile("|".join(re.escape(value) for value in sorted(values, key=len, reverse=True)))
    return [_quieted(problem, pattern, values) for problem in problems]


def unreadable(error: SpecError, file: Path, spec: Path) -> SpecError:
    """An error in an outside file that could not be composed: where and which rule, none of its text."""
    said = (
        f"{file} cannot be composed (its text is not shown: it lies outside the spec's repository"
        f" {root(spec)})"
    )
    return SpecError([replace(p, message=said, hint="") for p in error.problems])


def _quieted(problem: Problem, pattern: re.Pattern[str], values: dict[str, Path]) -> Problem:
    """The problem with each value replaced in its message, hint, key and the keys of its places, in
    one pass (what replaces a value is never searched again)."""

    def said(text: str) -> str:
        return pattern.sub(lambda found: f"<a value of {values[found[0]]}>", text)

    places = tuple(replace(place, key=said(place.key)) for place in problem.locations)
    return replace(
        problem,
        message=said(problem.message),
        hint=said(problem.hint),
        key=said(problem.key),
        locations=places,
    )


def _values(files: tuple[Path, ...]) -> dict[str, Path]:
    """Each key and string (and number, as text) an outside file holds, and the file."""
    found: dict[str, Path] = {}
    for file in files:
        try:
            data = load(file).data
        except SpecError:
            continue
        for key, value in walk(data):
            for item in [key[-1], *(value if isinstance(value, list) else [value])]:
                text = str(item) if isinstance(item, (str, int, float)) and not isinstance(item, bool) else ""
                for form in (text, repr(text)[1:-1]):  # as written, and as a message quotes it
                    if len(form) >= MIN_QUOTED:
                        found.setdefault(form, file)
    return found
