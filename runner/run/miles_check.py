"""miles_check: miles' own parser on every cell's launch, before the first ``ray start``.

A launch miles refuses would fail seconds after its job starts, behind a Ray head and the prepare
steps; here it fails its cell at once, with miles' message and the spec line (``runner.miles_parser``,
the one door to a checkout's parser). The job's interpreter is the node's ``python3`` (the caller's
PATH) or ``--miles-python``; when it cannot run miles' parser at all, or ``--no-miles-check`` or
``--no-preflight`` is given, nothing is checked and the run's summary says why. A dry run checks only
with ``--miles-python``: the interpreter named, the cost asked for.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner import miles_parser
from runner.errors import EnvironmentProblem, counted, first_line
from runner.launch.planned import Planned
from runner.run.plan import Options

NODE_PYTHON = "python3"


@dataclass(frozen=True)
class Verdict:
    refused: dict[str, str] = field(default_factory=dict)  # cell id -> why it fails (miles' message)
    note: str = ""  # what was checked, or why nothing was: for the run's summary


def check(planned: Sequence[Planned], options: Options) -> Verdict:
    """miles' verdict on ``planned``; every way it cannot be had is a note, never an error."""
    if not planned:  # nothing runs: nothing to check, nothing to say
        return Verdict()
    skipped = _skipped(options)
    if skipped:
        return Verdict(note=f"miles' parser not run: {skipped}")
    assert options.miles_root is not None  # _skipped says so otherwise
    python, named = _python(options)
    if python is None:
        return Verdict(
            note=f"miles' parser not run: {named} is not on PATH (--no-miles-check skips the check)"
        )
    started = time.monotonic()
    try:
        found = miles_parser.check(
            [p.cell for p in planned], python, options.miles_root, options.trust_checkout
        )
    except miles_parser.Unavailable as exc:
        return Verdict(note=f"miles' parser not run: {named} {exc.reason}")
    except EnvironmentProblem as exc:  # the sandbox itself could not start
        return Verdict(note=f"miles' parser not run: {first_line(exc)}")
    refused = {
        cell_id: "\n".join(str(p) for p in problems if p.severity == "error")
        for cell_id, problems in found.items()
        if any(p.severity == "error" for p in problems)
    }
    seconds = time.monotonic() - started
    said = f"miles' parser ({named}) checked {counted(len(found), 'cell')} in {seconds:.1f} s"
    return Verdict(refused, said + (f": it refuses {len(refused)}" if refused else ""))


def _skipped(options: Options) -> str:
    if not options.preflight:
        return "--no-preflight"
    if not options.miles_check:
        return "--no-miles-check"
    if options.miles_root is None:
        return "no miles checkout"
    return ""


def _python(options: Options) -> tuple[Path | None, str]:
    """The interpreter and how to name it: ``--miles-python`` as given, else the node's ``python3``."""
    if options.miles_python is not None:
        return options.miles_python, str(options.miles_python)
    found = shutil.which(NODE_PYTHON, path=options.caller_env.get("PATH"))
    return (Path(found) if found else None), NODE_PYTHON
