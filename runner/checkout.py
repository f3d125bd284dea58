"""What a local miles checkout says, read statically (nothing of it is run).

``scripts/models/<type>.sh`` declares ``MODEL_ARGS=( ... )``; we read that
array with shlex. An array that needs the shell to expand it (``$VAR``,
``$(...)``) cannot be read this way; the caller then keeps the preset and says so.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

_ARRAY = re.compile(r"^\s*MODEL_ARGS=\(", re.MULTILINE)


@dataclass(frozen=True)
class ModelArgs:
    source: Path
    tokens: tuple[str, ...] | None  # None: could not be read statically
    reason: str = ""


def model_args(miles_root: Path, model_type: str) -> ModelArgs | None:
    """MODEL_ARGS of ``model_type`` in the checkout, or None when it has no such script."""
    script = miles_root / "scripts" / "models" / f"{model_type}.sh"
    if not script.is_file():
        return None
    text = script.read_text(encoding="utf-8", errors="replace")
    match = _ARRAY.search(text)
    if not match:
        return ModelArgs(script, None, "it declares no MODEL_ARGS=( ... ) array")
    lexer = shlex.shlex(text[match.end() :], posix=True, punctuation_chars="()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens: list[str] = []
    for token in lexer:
        if token == ")":
            break
        if "$" in token or token == "(":
            return ModelArgs(script, None, f"it needs the shell to expand {token!r}")
        tokens.append(token)
    else:
        return ModelArgs(script, None, "its MODEL_ARGS array is not closed")
    return ModelArgs(script, tuple(tokens))
