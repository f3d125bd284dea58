"""workers: the single imports of a suite import, side by side in warm worker processes of
run-matrix's own (``runner.sandbox.workers`` starts them; this module says what they run).

``python -m runner.importer.workers [HELD...]`` is one worker: it answers each request with an
import's outcome or the recording an import lacks (``batch.answer``), and keeps what it learnt
(conventions, presets, flag catalogs, CI workflows) from one import to the next. An overlay (a
request with a base) goes before a case alone, so that a folder whose cases are imported alone
finishes before others start theirs, and tells its tests early. A worker that dies on an import
refuses that import with what it printed last.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.errors import Location, Problem
from runner.importer import recordings
from runner.importer.batch import answer
from runner.sandbox.workers import Workers, serve


def pool(jobs: int, held: Sequence[Path]) -> Workers:
    """``jobs`` workers, each taking the stamp of ``held`` once (``recordings.held``)."""
    argv = [sys.executable, "-m", "runner.importer.workers", *map(str, held)]
    return Workers(argv, jobs, rank=_rank, died=_died)


def _rank(request: Any) -> int:
    return 0 if getattr(request, "base", None) is not None else 1


def _died(request: Any, last: str) -> list[Problem]:
    at = (Location(request.script),) if hasattr(request, "script") else ()
    return [Problem("import", f"its import process ended without an answer ({last})", locations=at)]


if __name__ == "__main__":
    with recordings.held(Path(path) for path in sys.argv[1:]):
        serve(answer)
