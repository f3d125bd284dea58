"""repository: the files a spec may draw on — those inside its root — and the refusal of any other.

A spec's **root** is the nearest folder above it that is a matrices root (it holds ``hardware/``,
or the ``locate.ROOT_MARKER`` file that ``import -o DIR`` writes at DIR), else the spec's own
folder. A file a spec names to compose (a base of ``extends:``, a matrix's ``adjust:`` overlay) must
lie inside that root, inside run-matrix's own files, or inside a folder the user names with
``--allow-root DIR`` (``RUN_MATRIX_ALLOW_ROOTS``, separated as ``PATH`` is): anything else is refused
at the line that names it (rule G14) before it is opened, so a spec handed over by someone else
cannot make run-matrix read a host file into a launch, a terminal, a CI log or a report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from runner.errors import Location, SpecError
from runner.memos import resolved
from runner.spec import locate

ALLOW_ROOTS = "RUN_MATRIX_ALLOW_ROOTS"  # more roots, os.pathsep between them (--allow-root adds to it)
RULE = "G14"


def root(spec: Path) -> Path:
    """The spec's root: the nearest matrices root above it, else its own folder."""
    matrices = locate.matrices_root(spec)
    return resolved(matrices if matrices is not None else spec.parent)


def allowed_roots() -> tuple[Path, ...]:
    """The folders the user named (``--allow-root``, ``RUN_MATRIX_ALLOW_ROOTS``), resolved."""
    named = os.environ.get(ALLOW_ROOTS, "").split(os.pathsep)
    return tuple(resolved(Path(folder)) for folder in named if folder.strip())


def outside(spec: Path, file: Path) -> bool:
    """Whether ``file`` lies outside the spec's root, run-matrix's own files and every allowed root."""
    try:
        where = resolved(file)
    except (OSError, RuntimeError):  # a link loop: not a file anyone can read, readable_file says so
        return False
    roots = (root(spec), resolved(locate.PROJECT), *allowed_roots())
    return not any(where.is_relative_to(folder) for folder in roots)


def check_inside(spec: Path, file: Path, where: Location, key: str, named: str) -> None:
    """Refuse (G14, at ``where``) a file ``spec`` names that lies outside what it may draw on."""
    if not outside(spec, file):
        return
    raise SpecError.one(
        RULE,
        f"{named!r} ({resolved(file)}) lies outside the spec's root {root(spec)}: a spec composes only"
        " files inside its root",
        key=key,
        at=[where],
        hint=f"move it inside {root(spec)}, or name the folder that holds it: --allow-root DIR"
        f" (or {ALLOW_ROOTS}=DIR)",
    )


@contextmanager
def allowing(folders: Sequence[Path]) -> Iterator[None]:
    """``folders`` allowed too while the block runs (``--allow-root``; a written overlay's source):
    added to ``RUN_MATRIX_ALLOW_ROOTS``, where every reader of a spec and the validate cache's key see
    them, and the variable as it was after."""
    before = os.environ.get(ALLOW_ROOTS)
    if folders:
        named = [before] if before else []
        os.environ[ALLOW_ROOTS] = os.pathsep.join([*named, *(str(f) for f in folders)])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ALLOW_ROOTS, None)
        else:
            os.environ[ALLOW_ROOTS] = before


def written_beside(out: Path, source: Path) -> Path | None:
    """The root of ``source`` when an overlay written at ``out`` (extending it) lies outside it: the
    folder the overlay's validation allows, and the user's, to name with --allow-root."""
    return root(source) if outside(out, source) else None
