"""Files written whole or not at all: a temp file in the same folder, then a rename over the target.

A reader (CI collecting a JUnit file, a later run reading a record) sees the old content or
the new, never half of one; a write that fails (disk full, a file size limit) leaves the old.
Several files (a spec and its components) are written all together or not at all.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from runner.errors import EnvironmentProblem


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``; raises OSError (the target untouched) when it cannot."""
    mode = _mode(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _mode(path: Path) -> int:
    """The target's permissions when it exists, else what a plain open() would give it."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_all(files: Mapping[Path, str]) -> None:
    """Write every file, or none: if one fails, the files already replaced get their old text back
    and new ones (and the folders made for them) are removed; an OSError is an EnvironmentProblem."""
    old = {path: path.read_text(encoding="utf-8") for path in files if path.exists()}
    made: list[Path] = []
    done: list[Path] = []
    path = next(iter(files), Path())
    try:
        for path, text in files.items():
            for folder in reversed(path.parents):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            write_text(path, text)
            done.append(path)
    except BaseException as exc:
        for written in done:
            if written in old:
                written.write_text(old[written], encoding="utf-8")
            else:
                written.unlink(missing_ok=True)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        if isinstance(exc, OSError):  # a folder that cannot be made, a read-only file system, ...
            raise EnvironmentProblem(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from None
        raise
