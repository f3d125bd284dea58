"""cache: what was read from a checkout through the sandbox, kept on disk by content hash.

A key is the hash of every file the reading may depend on, so a changed file is a new key and
nothing is ever invalidated by hand. A cache that cannot be read or written only costs time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def folder(kind: str) -> Path:
    """``$RUN_MATRIX_CACHE_DIR``, else ``$XDG_CACHE_HOME/run-matrix``, else ``~/.cache/run-matrix``."""
    base = os.environ.get("RUN_MATRIX_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "run-matrix"
    )
    return Path(base) / kind


def cached(path: Path, read_now: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON object at ``path``, else what ``read_now()`` gives, stored there for next time."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(found, dict):
            return found
    except (OSError, ValueError):
        pass
    found = read_now()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        hidden = path.with_name(f".{path.name}.{os.getpid()}")
        hidden.write_text(json.dumps(found), encoding="utf-8")
        hidden.replace(path)  # a reader never sees half a file
    except OSError:
        pass
    return dict(found)
