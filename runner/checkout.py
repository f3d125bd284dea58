"""What a local miles checkout says, read statically (nothing of it is run).

``scripts/models/<type>.sh`` declares ``MODEL_ARGS=( ... )``; we read that
array with shlex. An array that needs the shell to expand it (``$VAR``,
``$(...)``) cannot be read this way; the caller then keeps the preset and says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.cell import Cell
from runner.errors import Problem
from runner.render import MILES_ROOT_REFERENCE, Context, preset_tokens

_ARRAY = re.compile(r"^\s*MODEL_ARGS=\(", re.MULTILINE)


@dataclass(frozen=True)
class ModelArgs:
    source: Path
    tokens: tuple[str, ...] | None  # None: could not be read statically
    reason: str = ""


MAX_SCRIPT_BYTES = 1_000_000  # a model script is a few kilobytes


def model_args(miles_root: Path, model_type: str) -> ModelArgs | None:
    """MODEL_ARGS of ``model_type`` in the checkout, or None when it has no such script."""
    script = miles_root / "scripts" / "models" / f"{model_type}.sh"
    if not script.is_file():
        return None
    if script.stat().st_size > MAX_SCRIPT_BYTES:
        return ModelArgs(script, None, f"it is larger than {MAX_SCRIPT_BYTES:,} bytes")
    text = script.read_text(encoding="utf-8", errors="replace")
    match = _ARRAY.search(text)
    if not match:
        return ModelArgs(script, None, "it declares no MODEL_ARGS=( ... ) array")
    lexer = shlex.shlex(text[match.end() :], posix=True, punctuation_chars="()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens: list[str] = []
    try:
        for token in lexer:
            if token == ")":
                break
            if "$" in token or token == "(":
                return ModelArgs(script, None, f"it needs the shell to expand {token!r}")
            tokens.append(token)
        else:
            return ModelArgs(script, None, "its MODEL_ARGS array is not closed")
    except ValueError as exc:  # shlex: "No closing quotation", "No escaped character"
        line = text[: match.start()].count("\n") + 1
        return ModelArgs(script, None, f"MODEL_ARGS=( at line {line}: {str(exc).lower()}")
    return ModelArgs(script, tuple(tokens))


def launch_context(
    cell: Cell, miles_root: Path | None, environ: Mapping[str, str]
) -> tuple[Context, list[Problem]]:
    """What render needs from this machine: the caller's env and, if given, the checkout's
    MODEL_ARGS — a difference from run-matrix's preset is a warning, never hidden."""
    if miles_root is None:
        return Context(dict(environ), MILES_ROOT_REFERENCE), []
    root = str(miles_root.resolve())
    found = model_args(miles_root, cell.spec.model.type) if cell.spec.model.type else None
    where = (cell.location("model", "type"),)
    if found is None:
        return Context(dict(environ), root), []
    if found.tokens is None:
        note = f"cannot read {found.source} ({found.reason}); using the preset"
        return Context(dict(environ), root), [Problem("model-args", note, "model.type", where, "warning")]
    preset = preset_tokens(cell)
    if tuple(found.tokens) == preset:
        return Context(dict(environ), root, found.tokens), []
    drift = Problem(
        "model-args",
        f"MODEL_ARGS of {found.source} differ from the preset {cell.preset.type}: "
        f"{_token_difference(preset, found.tokens)}; rendering the checkout's",
        "model.type",
        where,
        "warning",
        hint=f"update miles/models/{cell.preset.type}.yaml if the checkout is right",
    )
    return Context(dict(environ), root, found.tokens), [drift]


def _token_difference(preset: tuple[str, ...], found: tuple[str, ...]) -> str:
    only_preset = [t for t in preset if t not in found]
    only_found = [t for t in found if t not in preset]
    parts = []
    if only_found:
        parts.append("checkout has " + " ".join(only_found))
    if only_preset:
        parts.append("preset has " + " ".join(only_preset))
    return "; ".join(parts) or "same tokens in another order"
