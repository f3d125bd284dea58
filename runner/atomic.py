"""Files written whole or not at all: a temp file in the same folder, then a rename over the target.

A reader (CI collecting a JUnit file, a later run reading a record) sees the old content or
the new, never half of one; a write that fails (disk full, a file size limit) leaves the old.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


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
