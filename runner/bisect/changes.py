"""changes: what changed in a cell's launch from one commit to the next — the train script, each flag
(MODEL_ARGS, the preset's, included), each env var of the job (the launch conventions') and the flag
catalog the cell was checked against — so that a reader of the answer sees at once whether the
cell's launch moved, or only miles' code did.

Each side was rendered from a tree of its own, at a path of its own; that path reads ``${MILES_ROOT}``
on both sides, so that only what the commits changed differs. The spec and layout rows are
``runner.diff``'s, of the two cells as each commit builds them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from runner.diff import Difference, diff
from runner.launch.planned import Planned
from runner.launch.render import Launch

ROOT = "${MILES_ROOT}"
PRESET = "MODEL_ARGS: the model preset, as the commit's scripts/models/ has it"
FLAGS = "the test's own flags"
CONVENTIONS = "the job's env: the launch conventions (execute_train) and the spec's env:"


def changes(before: Planned, after: Planned) -> tuple[Difference, ...]:
    """The differences of ``after``'s launch from ``before``'s (its parent's)."""
    cells = diff(before.cell, after.cell, levels=("spec", "layout"))
    rows = [*cells.spec, *_launch(before, after), *cells.layout]
    return tuple(rows)


def _launch(before: Planned, after: Planned) -> Iterator[Difference]:
    a, b = before.launch, after.launch
    ra, rb = _root(before), _root(after)
    if a.train_script != b.train_script:
        yield Difference("train_script", a.train_script, b.train_script, None, None, "")
    fa, fb = _flags(a, ra), _flags(b, rb)
    preset = {token[2:] for token in (*a.model_args, *b.model_args) if token.startswith("--")}
    for name in dict.fromkeys([*fa, *fb]):
        if fa.get(name) != fb.get(name):
            why = PRESET if name in preset else FLAGS
            yield Difference(f"--{name}", _shown(fa.get(name)), _shown(fb.get(name)), None, None, why)
    ea, eb = _env(a, ra), _env(b, rb)
    for name in dict.fromkeys([*ea, *eb]):
        if ea.get(name) != eb.get(name):
            yield Difference(f"env {name}", ea.get(name), eb.get(name), None, None, CONVENTIONS)
    ca, cb = _catalog(before, ra), _catalog(after, rb)
    if ca != cb:
        yield Difference("flag catalog", ca, cb, None, None, "the flags the cell is checked against")


def _root(planned: Planned) -> str:
    root = planned.cell.miles_root
    return str(Path(root).resolve()) if root is not None else ROOT


def _flags(launch: Launch, root: str) -> dict[str, tuple[str, ...]]:
    """The job's flags, the checkout's folder written as ``${MILES_ROOT}``."""
    return {
        name: tuple(value.replace(root, ROOT) for value in values) for name, values in launch.flags().items()
    }


def _env(launch: Launch, root: str) -> dict[str, str]:
    return {name: value.replace(root, ROOT) for name, value in launch.env.items()}


def _catalog(planned: Planned, root: str) -> str:
    choice = planned.cell.flags
    return choice.reason.replace(root, ROOT) if choice is not None else ""


def _shown(values: tuple[str, ...] | None) -> str | None:
    if values is None:
        return None
    return " ".join(values) if values else "(switch)"
