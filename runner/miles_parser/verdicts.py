"""verdicts: what the worker left, as problems of rule ``miles`` at the line of the flag miles names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.cells.cell import Cell
from runner.check import problem
from runner.errors import EnvironmentProblem, Problem, first_line, printable
from runner.sandbox import Outcome
from runner.spec import documents

RULE = "miles"
MAX_MESSAGE = 600
MAX_VERDICT_BYTES = 1 << 20  # a verdict line: an id, a status, a message of at most MAX_MESSAGE
DASHED = re.compile(r"--([a-z0-9][a-z0-9-]*[a-z0-9])")
SNAKE = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
MISSING = "install it into --miles-python's environment (the oracle: tools/oracles/miles/requirements.txt)"
# a parser crashing on its own namespace: PY's packages (SGLang, Megatron) are not the ones this miles
# version was written for, more likely than a fault of the spec
MISMATCH_KINDS = ("AttributeError", "TypeError", "KeyError")
MISMATCH = (
    "miles' parser crashed rather than refused: check that --miles-python holds the SGLang and Megatron"
    " this miles version pins (the oracle of tools/oracles/miles/ is miles main's), then the flag it names"
)
HINT = "miles' own parse_args() refuses this launch: change the flag it names (the message is miles')"


class Unavailable(EnvironmentProblem):
    """miles' parser could not be run with this interpreter at all; ``reason`` says why, in a few words
    (``run`` skips the check with it; ``validate``, ``render`` and ``import`` stop with the whole message)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def replies(outcome: Outcome, python: Path, wall_s: float) -> dict[str, dict[str, Any]]:
    """The worker's verdict per cell id; an environment error when miles could not even be imported."""
    if "import.txt" in outcome.files:
        reason = printable(outcome.files["import.txt"].decode("utf-8", "replace")[:MAX_MESSAGE])
        raise Unavailable(
            f"--miles-python {python} cannot import the checkout's parser: {reason}\n"
            "  ==> give an interpreter whose packages hold miles' dependencies (tools/oracles/miles/build.sh"
            " builds one for miles main)",
            f"cannot import miles ({first_line(reason)})",
        )
    found: dict[str, dict[str, Any]] = {}
    for line in outcome.files.get("verdicts.jsonl", b"").decode("utf-8", "replace").splitlines():
        try:
            reply = documents.json_data(line, MAX_VERDICT_BYTES)
        except ValueError:  # documents.Unreadable
            continue
        if isinstance(reply, dict) and isinstance(reply.get("id"), str):
            found[reply["id"]] = reply
    if not found:  # not one verdict: the interpreter is no Python with miles' needs, or it hung
        why = f"it ran past {wall_s:.0f} s" if outcome.timed_out else _last_line(outcome.output)
        raise Unavailable(
            f"--miles-python {python} did not run miles' parser: {why}\n"
            "  ==> check that it is a Python interpreter with miles' dependencies"
            " (try: PY -c 'import sglang, megatron')",
            f"did not run miles' parser ({why})",
        )
    return found


def problems(cell: Cell, reply: dict[str, Any] | None) -> list[Problem]:
    """The problem miles' verdict on ``cell`` is, if any."""
    if reply is None:
        return [
            problem(
                RULE, cell, (), "miles' parser gave no verdict: it ended or ran out of time before this cell"
            )
        ]
    if reply.get("accepted") is True:
        return []
    message = printable(str(reply.get("message", ""))[:MAX_MESSAGE])
    kind = printable(str(reply.get("kind", "error")))
    if kind in ("ModuleNotFoundError", "ImportError"):  # PY's want, not the spec's fault
        said = f"miles' parser could not run for this cell: {kind}: {message}"
        return [problem(RULE, cell, (), said, MISSING)]
    if kind == "AssertionError" and message == kind:  # a bare assert: its line is all miles says
        message = f"a bare assert at {reply.get('at') or 'an unknown line'}"
    said = message if kind in ("exit", "AssertionError", "ValueError") else f"{kind}: {message}"
    hint = MISMATCH if kind in MISMATCH_KINDS else HINT
    return [problem(RULE, cell, named_flags(cell, message), f"miles refuses it: {said}", hint)]


def not_checked(cell: Cell, token: str) -> Problem:
    return problem(
        RULE,
        cell,
        (),
        f"not checked with miles' parser: {token!r} is decided at launch",
        "its other cells are checked; this one is checked by run before ray start",
        "warning",
    )


def named_flags(cell: Cell, message: str) -> tuple[str, ...]:
    """The flags the cell sets that miles' message names (--a-b, or a_b as in args.a_b), in order."""
    names = [*DASHED.findall(message), *(name.replace("_", "-") for name in SNAKE.findall(message))]
    return tuple(dict.fromkeys(name for name in names if cell.flag(name) is not None))


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return printable(first_line(lines[-1])) if lines else "it printed nothing"
