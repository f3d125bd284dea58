"""workers: the single imports of a folder or suite import, one by one here or side by side in warm
worker processes (``runner.sandbox.workers`` starts them).

``python -m runner.importer.workers [HELD...]`` is one worker: it answers each request with an
import's outcome (``attempt``) or the recording an import lacks (``together.next_wanted``), and keeps
what it learnt (conventions, presets, flag catalogs, CI workflows) from one import to the next. An
overlay (a request with a base) goes before a case alone, so that a folder whose cases are imported
alone finishes before others start theirs, and tells its tests early. A worker that dies on an
import refuses that import with what it printed last.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.errors import Location, Problem, RunMatrixError, SpecError
from runner.importer import Imported, Request, import_test, recordings, together
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


def answer(one: Request | together.Look) -> Any:
    """A worker's answer: an import's (``attempt``), or the recording an import lacks (``together``)."""
    return together.next_wanted(one) if isinstance(one, together.Look) else attempt(one)


def attempt(one: Request) -> Imported | list[Problem]:
    """One import: what it wrote, or why it was refused (an error of the environment, such as a
    sandbox that cannot start, refuses it too: the other tests may still import)."""
    try:
        return import_test(one)
    except SpecError as exc:
        return list(exc.problems)
    except RunMatrixError as exc:
        return [Problem("import", str(exc), locations=(Location(one.script),))]


if __name__ == "__main__":
    with recordings.held(Path(path) for path in sys.argv[1:]):
        serve(answer)
