"""Shell text for display: argv -> one line that bash parses back to the same argv.

Tokens are quoted with ``shlex.quote``; a token holding ``${NAME}`` references
(secrets, the miles checkout, run-time probes) is written as single-quoted
literal parts joined to double-quoted references, so that bash expands the
references and nothing else, and ``shlex.split`` gives the token back.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_FLAG = re.compile(r"--?[A-Za-z]")  # -k, --name, --name=value; not a value such as -1
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def quote(token: str) -> str:
    if not _REFERENCE.search(token):
        return shlex.quote(token)
    parts: list[str] = []
    position = 0
    for match in _REFERENCE.finditer(token):
        if match.start() > position:
            parts.append(shlex.quote(token[position : match.start()]))
        parts.append(f'"{match.group()}"')
        position = match.end()
    if position < len(token):
        parts.append(shlex.quote(token[position:]))
    return "".join(parts)


def line(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    prefix = [f"{name}={quote(value)}" for name, value in (env or {}).items()]
    return " ".join([*prefix, *(quote(token) for token in argv)])


def lines(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """``line``'s command one flag per line: a line break (`` \\`` and an indent) before each token that
    starts a flag, ``--`` kept with the program after it. bash joins the lines into the same command;
    ``shlex.split`` of the text without its ``\\`` + newline pairs gives back the argv."""
    rows: list[list[str]] = [[f"{name}={quote(value)}" for name, value in (env or {}).items()]]
    for index, token in enumerate(argv):
        after_separator = index > 0 and argv[index - 1] == "--"
        if rows[-1] and not after_separator and (token == "--" or _FLAG.match(token)):
            rows.append([])
        rows[-1].append(quote(token))
    return " \\\n  ".join(" ".join(row) for row in rows)


def comment(text: str) -> str:
    """``# text`` on one line: a name from a spec (a verify or prepare step's) may hold a newline,
    which would otherwise end the comment and make the rest of the name a command."""
    return "# " + _CONTROL.sub(lambda found: ascii(found.group())[1:-1], text)


def references(text: str) -> list[str]:
    """The names of the ``${NAME}`` references in ``text``."""
    return [match.group()[2:-1] for match in _REFERENCE.finditer(text)]
