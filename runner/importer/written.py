"""written: what an import of a folder wrote under ``-o DIR``, kept in DIR's root marker.

``DIR/.run-matrix-root`` (``locate.ROOT_MARKER``) makes DIR a matrices root — the specs in it may
extend and name each other's files without a G14 warning, and their cell names start at DIR — and
lists every file the import wrote, relative to DIR. A re-import with ``--force`` replaces exactly
those: what it writes again is overwritten, what it no longer writes is removed (with the folders
that leaves empty), and a file of the user's own in DIR is never touched. The marker is JSON::

    {"written by": "run-matrix import", "tests": "/src/miles/tests/e2e", "checkout": "/src/miles",
     "commit": "31f1ca96...", "files": ["ckpt/base/ckpt.yaml", "ckpt/components/...", ...]}

A marker is read as a stranger's file: bounded, and a path in it that is absolute, climbs out with
``..``, or is not a regular file in DIR is never removed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from runner import atomic
from runner.errors import EnvironmentProblem
from runner.spec import documents
from runner.spec.locate import ROOT_MARKER

MAX_MARKER_BYTES = 4 * 1024 * 1024  # a suite of 2,000 tests lists well under a megabyte
WRITTEN_BY = "run-matrix import"


def earlier(output: Path) -> list[Path]:
    """The files an earlier import wrote under ``output`` (none without a marker, or with one that
    is not an import's list)."""
    marker = output / ROOT_MARKER
    try:
        if marker.is_symlink() or not marker.is_file() or marker.stat().st_size > MAX_MARKER_BYTES:
            return []
        data = documents.json_data(marker.read_text(encoding="utf-8"), MAX_MARKER_BYTES)
    except (OSError, UnicodeDecodeError, ValueError):  # documents.Unreadable is a ValueError
        return []
    listed = data.get("files") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return []
    return [output / name for name in listed if isinstance(name, str) and _inside(name)]


def replace(output: Path, now: Iterable[Path], before: Iterable[Path]) -> list[Path]:
    """Remove what an earlier import wrote and this one did not (returned), and the folders under
    ``output`` that leaves empty; a link or a folder there is left alone."""
    kept = {_key(path) for path in now}
    inside = output.resolve()
    gone = [
        path
        for path in before
        if _key(path) not in kept
        and path.is_file()
        and not path.is_symlink()
        and path.resolve().is_relative_to(inside)  # a linked folder on the way leads elsewhere
    ]
    for path in gone:
        try:
            path.unlink()
        except OSError as exc:
            said = f"cannot remove {path}, which an earlier import wrote: {exc.strerror}"
            raise EnvironmentProblem(said) from None
    for folder in sorted({p.parent for p in gone}, key=lambda p: len(p.parts), reverse=True):
        for empty in [folder, *folder.parents]:
            if empty == output or not empty.is_relative_to(output):
                break
            with contextlib.suppress(OSError):  # not empty: it holds what the user or this import put there
                empty.rmdir()
    return gone


def mark(output: Path, files: Iterable[Path], tests: Path, checkout: Path | None, commit: str | None) -> Path:
    """Write ``output``'s marker, listing ``files``; returns its path."""
    marker = output / ROOT_MARKER
    record = {
        "written by": WRITTEN_BY,
        "tests": str(tests.resolve()),
        "checkout": str(checkout.resolve()) if checkout else None,
        "commit": commit,
        "files": sorted(PurePosixPath(Path(os.path.relpath(f, output))).as_posix() for f in files),
    }
    atomic.write_text(marker, json.dumps(record, indent=1) + "\n", replace_link=True)
    return marker


def _inside(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\0" not in name


def _key(path: Path) -> str:
    return os.path.normpath(os.path.abspath(path))
