"""cache: what was read from a checkout through the sandbox, kept on disk by content hash.

A key is the hash of every file the reading may depend on, so a changed file is a new key and
nothing is ever invalidated by hand. A cache that cannot be read or written only costs time.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.atomic import write_text
from runner.errors import EnvironmentProblem
from runner.spec import documents

MAX_CACHED_BYTES = 64 << 20  # what the sandbox read of a checkout: a few kB to a few MB


def folder(kind: str) -> Path:
    """``$RUN_MATRIX_CACHE_DIR``, else ``$XDG_CACHE_HOME/run-matrix``, else ``~/.cache/run-matrix``."""
    base = os.environ.get("RUN_MATRIX_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "run-matrix"
    )
    return Path(base) / kind


def cached(path: Path, read_now: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The JSON object at ``path``, else what ``read_now()`` gives, stored there for next time."""
    try:
        found = documents.json_data(documents.file_bytes(path, MAX_CACHED_BYTES), MAX_CACHED_BYTES)
        if isinstance(found, dict):
            return found
    except (OSError, ValueError):
        pass
    found = read_now()
    with contextlib.suppress(OSError, EnvironmentProblem):  # a link planted there: not kept
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(found))  # a reader never sees half a file
    return dict(found)
