"""subject: what an upgrade moves, and the cells the moved spec is validated on.

A spec that names its hardware has cells: it is moved and validated as itself. A base (no
``hardware:``; only other specs extend it) has none, so it is validated as the specs that extend it
use it: each is composed over the moved base (its ``extends:`` line naming the overlay instead, in
memory; no line moves) and checked. A problem at the base's lines, at the overlay's, or one that
stops an extender from composing is the upgrade's; a problem at an extender's own line (a flag it
sets itself) is the extender's, listed apart: that spec wants its own upgrade.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner import check, pipeline
from runner.cells import build
from runner.cells.cell import Cell
from runner.errors import Location, Problem, SpecError, UsageError, display_path
from runner.spec import locate
from runner.spec.compose import compose
from runner.spec.load import load
from runner.spec.paths import read_text
from runner.spec.provenance import Composed

MAX_SPECS = 2000  # spec files searched for a base's extenders (GLM-5's tree has 20)


@dataclass(frozen=True)
class Subject:
    path: Path
    composed: Composed
    cells: list[Cell]  # a spec's own; a base has none
    extenders: tuple[Path, ...]  # a base's: the specs with cells whose extends chain passes through it

    @property
    def is_base(self) -> bool:
        return not self.cells

    @property
    def version(self) -> str | None:
        written = self.composed.data.get("miles_version")
        return None if written is None else str(written)

    def location(self, *key: str) -> Location:
        return self.composed.location(key)


@dataclass(frozen=True)
class Checked:
    problems: list[Problem]  # the moved spec's, each once: these decide the exit code
    extenders: list[Problem]  # at the extenders' own lines (a base only)


def subject(path: Path) -> Subject:
    composed = compose(path)
    if "hardware" in composed.data:
        return Subject(path, composed, pipeline.cells(path), ())
    return Subject(path, composed, [], tuple(_extenders(path.resolve())))


def _extenders(base: Path) -> Iterator[Path]:
    root = locate.matrices_root(base) or base.parent
    for count, spec in enumerate(build.spec_files([root])):
        if count >= MAX_SPECS:
            raise UsageError(
                f"{display_path(root)} holds more than {MAX_SPECS} specs: not searched for extenders"
            )
        try:
            files = compose(spec).files
        except SpecError:
            continue  # a broken spec elsewhere is not this upgrade's: `validate` names it
        if base in files and spec.resolve() != base:
            yield spec


def checked(moved: Subject, out: Path, text: str, checkout: Path | None) -> Checked:
    """The problems of the moved spec: its own cells', or a base's extenders' over it."""
    documents = {out.resolve(): text}
    if not moved.is_base:
        return Checked(_fatal_first([out], documents, checkout), [])
    if not moved.extenders:  # nothing uses it: it is checked as `validate` checks a base
        try:
            compose(out, documents)
        except SpecError as exc:
            return Checked(list(exc.problems), [])
        return Checked([], [])
    documents.update(_retargeted(moved, out))
    fatal, found = _problems(list(moved.extenders), documents, checkout)
    own = {*moved.composed.files, out.resolve()}
    theirs = [p for p in found if p.locations and not any(loc.file.resolve() in own for loc in p.locations)]
    return Checked([*fatal, *(p for p in found if p not in theirs)], theirs)


def _fatal_first(specs: list[Path], documents: dict[Path, str], checkout: Path | None) -> list[Problem]:
    fatal, found = _problems(specs, documents, checkout)
    return [*fatal, *found]


def _problems(
    specs: list[Path], documents: dict[Path, str], checkout: Path | None
) -> tuple[list[Problem], list[Problem]]:
    """The errors of the specs that no longer compose (the move's, wherever they point), and every
    cell's problems of the others; each once."""
    fatal: list[Problem] = []
    found: list[Problem] = []
    for spec in specs:
        try:
            cells = pipeline.cells(spec, miles_root=checkout, documents=documents)
            found += [p for cell in cells for p in check.run(cell)]
        except SpecError as exc:
            fatal += exc.problems
    return list(dict.fromkeys(fatal)), list(dict.fromkeys(found))


def _retargeted(moved: Subject, out: Path) -> dict[Path, str]:
    """The text of each file that extends the base, naming the overlay instead (same lines)."""
    base = moved.path.resolve()
    found: dict[Path, str] = {}
    for spec in moved.extenders:
        for file in compose(spec).files:
            if file in found or file in moved.composed.files:
                continue
            doc = load(file)
            names = doc.data.get("extends")
            for name in [names] if isinstance(names, str) else names or []:
                if (file.parent / name).resolve() == base:
                    new = Path(os.path.relpath(out.resolve(), file.parent)).as_posix()
                    found[file] = _retarget(read_text(file), doc.lines.get(("extends",), 1), name, new, file)
    return found


def _retarget(text: str, line: int, name: str, new: str, file: Path) -> str:
    lines = text.splitlines(keepends=True)
    for number in range(line - 1, len(lines)):
        if name in lines[number]:
            lines[number] = lines[number].replace(name, new, 1)
            return "".join(lines)
    raise UsageError(
        f"{display_path(file)}:{line}: extends {name!r}, but not as plain text on its lines (escaped?): "
        "write the path as it is, then upgrade the base again"
    )
