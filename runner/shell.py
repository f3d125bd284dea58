"""Shell text for display: argv -> one line that bash parses back to the same argv.

Tokens are quoted with ``shlex.quote``, except tokens holding ``${NAME}``
references (secrets, the miles checkout, run-time probes): those are
double-quoted so that bash expands the reference and nothing else.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def quote(token: str) -> str:
    if not _REFERENCE.search(token):
        return shlex.quote(token)
    parts: list[str] = []
    position = 0
    for match in _REFERENCE.finditer(token):
        parts.append(_escape(token[position : match.start()]))
        parts.append(match.group())
        position = match.end()
    parts.append(_escape(token[position:]))
    return '"' + "".join(parts) + '"'


def _escape(text: str) -> str:
    return re.sub(r'([\\"`$])', r"\\\1", text)


def line(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    prefix = [f"{name}={quote(value)}" for name, value in (env or {}).items()]
    return " ".join([*prefix, *(quote(token) for token in argv)])


def references(text: str) -> list[str]:
    """The names of the ``${NAME}`` references in ``text``."""
    return [match.group()[2:-1] for match in _REFERENCE.finditer(text)]
