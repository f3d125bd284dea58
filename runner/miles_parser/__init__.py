"""miles_parser: miles' own word on each cell — the checkout's ``parse_args()`` run on the cell's argv.

Our rules (``runner.check``) are fast and explain themselves; miles decides. Given an interpreter
whose packages hold miles' dependencies (``--miles-python PY``: the user's container, or the oracle
``tools/oracles/miles/build.sh`` makes), ``check`` runs the checkout's ``parse_args()`` in the
sandbox, network off, on each cell's exact argv (``request.py``), in one process per platform
(``worker.py``), and turns each refusal into a problem of rule ``miles`` at the spec line of the
flag miles' message names (``verdicts.py``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from runner import sandbox
from runner.cells.cell import Cell
from runner.errors import Problem
from runner.miles_parser import verdicts
from runner.miles_parser.request import request, unresolved
from runner.miles_parser.verdicts import Unavailable

__all__ = ["Unavailable", "check", "checked_python", "verdict"]

WORKER = Path(__file__).with_name("worker.py")
START_S = 240  # importing miles, SGLang, Megatron and torch on a busy 2-core machine
SECONDS_PER_CELL = 30
MiB = 1 << 20


def check(
    cells: Sequence[Cell], python: Path, miles_root: Path, trust: bool = False
) -> dict[str, list[Problem]]:
    """Problems of rule ``miles`` per cell id (an empty list: miles accepts it)."""
    python = checked_python(python)
    found: dict[str, list[Problem]] = {cell.id: [] for cell in cells}
    by_platform: dict[str, list[tuple[Cell, dict[str, object]]]] = {}
    for cell in cells:
        item = request(cell, miles_root.resolve())
        late = unresolved(item)
        if late is not None:
            found[cell.id].append(verdicts.not_checked(cell, late))
            continue
        by_platform.setdefault(cell.profile.platform, []).append((cell, item))
    for batch in by_platform.values():
        replies = _run(python, miles_root.resolve(), [item for _, item in batch], trust)
        for cell, item in batch:
            found[cell.id] += verdicts.problems(cell, replies.get(str(item["id"])))
    return found


def verdict(problems: Sequence[Problem]) -> str:
    """A cell's verdict in a word, as ``list`` and ``coverage`` show it: ``accepts``, ``refuses``, or
    ``unchecked`` (a value of its argv is decided at launch: ``run`` checks it before ``ray start``)."""
    if any(p.severity == "error" for p in problems):
        return "refuses"
    return "unchecked" if problems else "accepts"


def checked_python(python: Path) -> Path:
    """``python`` as an absolute path to an executable file, else an environment error (exit 3)."""
    path = Path(os.path.abspath(python))
    if not path.is_file() or not os.access(path, os.X_OK):
        raise Unavailable(
            f"--miles-python {python}: not an executable file\n"
            "  ==> give an interpreter whose packages hold miles' dependencies (the miles container's"
            " python3, or .oracles/miles/bin/python from tools/oracles/miles/build.sh)",
            "not an executable file",
        )
    return path


def _run(
    python: Path, miles_root: Path, items: list[dict[str, object]], trust: bool
) -> dict[str, dict[str, object]]:
    """The worker's verdicts by cell id, from one sandboxed process for all ``items``."""
    payload = {
        "miles_root": str(miles_root),
        "device": items[0]["device"],
        "cells": items,
        "seconds_per_cell": SECONDS_PER_CELL,
    }
    limits = sandbox.Limits(
        wall_s=START_S + SECONDS_PER_CELL * len(items),
        cpu_s=START_S + SECONDS_PER_CELL * len(items),
        address_space=32 * 1024 * MiB,
        scratch=256 * MiB,
        processes=256,
    )
    with tempfile.TemporaryDirectory(prefix="run-matrix-miles-") as folder:
        os.chmod(folder, 0o755)
        path = Path(folder) / "request.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        path.chmod(0o644)
        interpreter = sandbox.installation(python)  # what PY needs, links resolved: never PY/../..
        outcome = sandbox.run(
            [str(python), "-B", str(WORKER), str(path)],
            reads=[miles_root, Path(folder), *interpreter.reads],
            links=interpreter.links,
            cwd=miles_root,
            limits=limits,
            trust=trust,
        )
    return verdicts.replies(outcome, python, limits.wall_s)
