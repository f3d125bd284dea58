"""secrets: the caller's secret values, kept out of the sandbox and out of whatever comes back.

The child's environment is built from nothing, so no variable of the caller's reaches it. What
it prints, and any text run-matrix is about to write, is still scrubbed: a secret value that
shows up anyway becomes its ``${NAME}`` reference.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

SECRET_SUFFIXES = ("_TOKEN", "_KEY", "_SECRET", "_SECRETS", "_PASSWORD", "_PASSWD", "_CREDENTIALS")
SHORTEST = 6  # shorter values occur by chance in ordinary text: replacing them would garble it


def caller_secrets(named: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{name: value}`` of the caller's secrets: ``named`` ones and every ``*_TOKEN``, ``*_KEY``,
    ``*_SECRET`` (...) variable that is set to a value long enough to recognise."""
    environ = os.environ if environ is None else environ
    wanted = set(named)
    return {
        name: value
        for name, value in environ.items()
        if (name in wanted or name.upper().endswith(SECRET_SUFFIXES)) and len(value) >= SHORTEST
    }


def redact(text: str, secrets: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with each secret value replaced by ``${NAME}``; the names that were found."""
    found: list[str] = []
    for name, value in sorted(secrets.items(), key=lambda item: -len(item[1])):  # longest first
        if value in text:
            text = text.replace(value, f"${{{name}}}")
            found.append(name)
    return text, found
