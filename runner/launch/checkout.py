"""What a local miles checkout says about a cell's launch: its own MODEL_ARGS and conventions.

The checkout's ``scripts/models/<type>.py`` or ``.sh`` is expanded as miles expands it, and its
``execute_train`` is observed, both in the sandbox (``runner.knowledge.presets``,
``runner.knowledge.conventions``); a difference from run-matrix's shipped preset or launch
conventions is a warning that names the tokens, never hidden. Those modules, and the sandbox, are
imported only when a checkout is named: ``render`` without one never reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from runner.cells.cell import Cell
from runner.errors import Problem, RunMatrixError, SpecError
from runner.launch.render import Context, preset_tokens
from runner.launch.runtime_env import MILES_ROOT_REFERENCE
from runner.launch.steps import overridden
from schemas import LaunchConventions

if TYPE_CHECKING:
    from runner.knowledge.conventions import Observed


@dataclass(frozen=True)
class ModelArgs:
    source: Path
    tokens: tuple[str, ...] | None  # None: the checkout's preset did not expand
    reason: str = ""


def model_args(miles_root: Path, model_type: str, trust: bool = False) -> ModelArgs | None:
    """MODEL_ARGS of ``model_type`` in the checkout, or None when it has no preset of that type."""
    from runner.knowledge import presets

    found = presets.expand(miles_root, trust=trust).get(model_type)
    if found is None:
        return None
    return ModelArgs(found.source, found.tokens or None, found.error)


def observer(cells: Sequence[Cell]) -> Observed | None:
    """One command's record of what a checkout's execute_train submits, given to every
    :func:`launch_context` of the command (None when no cell was built with a checkout: the sandbox
    is not imported)."""
    if all(cell.miles_root is None for cell in cells):
        return None
    from runner.knowledge.conventions import Observed

    return Observed()


def launch_context(
    cell: Cell, environ: Mapping[str, str], trust: bool = False, observed: Observed | None = None
) -> tuple[Context, list[Problem]]:
    """What render needs from this machine: the caller's env and, if the cell was built with a
    checkout (``--miles-root``), the checkout's MODEL_ARGS and conventions — a difference from
    run-matrix's shipped ones is a warning, never hidden. ``observed``: the command's
    :func:`observer`, so that its cells observe the checkout once."""
    miles_root = cell.miles_root
    if miles_root is None:
        return Context(dict(environ), MILES_ROOT_REFERENCE), []
    conventions, launch_drift = _conventions(cell, miles_root, trust, observed)
    context, model_drift = _model_args_context(cell, miles_root, environ, trust)
    return replace(context, conventions=conventions), launch_drift + model_drift


def _conventions(
    cell: Cell, miles_root: Path, trust: bool, observed: Observed | None
) -> tuple[LaunchConventions, list[Problem]]:
    """The checkout's own execute_train decides what is added around the flags."""
    from runner.knowledge.conventions import checkout_conventions
    from runner.sandbox.bwrap import IsolationUnavailable

    shipped = f"the shipped launch conventions (miles {(cell.conventions.miles_commit or 'unknown')[:8]})"
    where = (cell.location("miles_version"),)
    try:
        conventions, differences = checkout_conventions(
            miles_root, cell.conventions, cell.spec.model.type, trust, observed
        )
    except IsolationUnavailable:
        raise
    except RunMatrixError as exc:  # a checkout whose helpers cannot run: said, and the shipped kept
        reason = exc.problems[0].message if isinstance(exc, SpecError) else str(exc).splitlines()[0]
        note = f"the checkout's execute_train cannot be observed ({reason}); using {shipped}"
        return cell.conventions, [Problem("launch", note, "miles_version", where, "warning")]
    if not differences:
        return conventions, []
    drift = Problem(
        "launch",
        f"execute_train of {miles_root} differs from {shipped}, so the checkout's conventions are rendered:"
        f" {'; '.join(differences)}",
        "miles_version",
        where,
        "warning",
        hint="set miles_version to the checkout's version if one is shipped (`run-matrix presets list`)",
    )
    return conventions, [drift]


def _model_args_context(
    cell: Cell, miles_root: Path, environ: Mapping[str, str], trust: bool
) -> tuple[Context, list[Problem]]:
    root = str(miles_root.resolve())
    if not cell.spec.model.type:  # FSDP: no MODEL_ARGS
        return Context(dict(environ), root), []
    found = model_args(miles_root, cell.spec.model.type, trust)
    where = (cell.location("model", "type"),)
    shipped = f"the shipped preset (miles {(cell.preset.miles_commit or 'unknown')[:8]})"
    if found is None or found.tokens is None:
        model_type = cell.spec.model.type
        why = (
            f"the checkout's scripts/models/{found.source.name} {found.reason}"
            if found
            else f"the checkout has no scripts/models/{model_type}.py or .sh"
        )
        note = f"{why}; using {shipped}"
        return Context(dict(environ), root), [Problem("model-args", note, "model.type", where, "warning")]
    preset = preset_tokens(cell)
    tokens = overridden(found.tokens, cell.spec.model.args)
    if tokens == preset:
        return Context(dict(environ), root, tokens), []
    drift = Problem(
        "model-args",
        f"MODEL_ARGS of {found.source} differ from {shipped} of {cell.preset.type}, so the checkout's"
        f" are rendered: {_token_difference(preset, tokens)}",
        "model.type",
        where,
        "warning",
        hint="if the checkout is right, `run-matrix presets sync --miles-root DIR` ships its presets",
    )
    return Context(dict(environ), root, tokens), [drift]


def _token_difference(preset: tuple[str, ...], found: tuple[str, ...]) -> str:
    """Flag by flag (``--num-layers 6 (preset: 4)``): a value apart from its flag says nothing."""
    ours, theirs = _by_flag(preset), _by_flag(found)
    parts = [
        f"checkout has {_shown(flag, words)}"
        if flag not in ours
        else f"{_shown(flag, words)} (preset: {_shown('', ours[flag]) or 'no value'})"
        for flag, words in theirs.items()
        if ours.get(flag) != words
    ]
    parts += [f"preset has {_shown(flag, words)}" for flag, words in ours.items() if flag not in theirs]
    return "; ".join(parts) or "the same flags, in another order or repeated"


def _by_flag(tokens: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """``--flag v1 v2 --switch`` as ``{"--flag": ("v1", "v2"), "--switch": ()}`` (words before any
    flag under "")."""
    grouped: dict[str, list[str]] = {}
    words = grouped.setdefault("", [])
    for token in tokens:
        if token.startswith("--"):
            words = grouped.setdefault(token, [])
        else:
            words.append(token)
    return {flag: tuple(values) for flag, values in grouped.items() if flag or values}


def _shown(flag: str, words: tuple[str, ...]) -> str:
    return " ".join([flag, *words] if flag else words)
