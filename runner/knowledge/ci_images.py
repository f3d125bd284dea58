"""ci_images: what a platform's CI image sets for every process in it — a Dockerfile's ``ENV`` lines of
its last stage, ``${ARG}`` filled from the stage's ``ARG`` defaults — read as text, nothing built or run.

A value that names what the file does not set (``ENV PATH="/opt/bin:${PATH}"``) is listed as set but
unknown, with the reason; a line that does not split (an unclosed quote) is a problem at its line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.errors import Location, Problem

MAX_LINES = 20_000  # a Dockerfile is a few hundred lines
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Setting:
    """One variable a platform's CI sets for the test process."""

    value: str | None  # None: set, but to a value only the CI run knows
    source: str  # checkout-relative file:line
    why: str = ""  # for a value of None: why it is unknown


def at(path: str, line: int | None = None) -> tuple[Location, ...]:
    """A place in the checkout, relative to its root."""
    return (Location(Path(path), line),)


def dockerfile_env(path: str, text: str, problems: list[Problem]) -> dict[str, Setting]:
    """The ``ENV`` of the Dockerfile's last stage, ``${ARG}`` filled from the stage's ``ARG`` defaults
    (a global one redeclared without a default keeps it); a value naming what the file does not set
    is listed as unknown."""
    global_args: dict[str, str | None] = {}
    args: dict[str, str | None] | None = None  # None before the first FROM
    env: dict[str, Setting] = {}
    for line, instruction, rest in _instructions(text):
        if instruction == "FROM":
            args, env = {}, {}
        elif instruction == "ARG":
            name, equals, default = rest.partition("=")
            value = _unquoted(default) if equals else global_args.get(name.strip())
            (global_args if args is None else args)[name.strip()] = value
        elif instruction == "ENV" and args is not None:
            known = {**args, **{name: setting.value for name, setting in env.items()}}
            for name, value in _env_pairs(path, line, rest, problems):
                env[name] = _filled(value, known, f"{path}:{line}")
    return env


def _instructions(text: str) -> Iterator[tuple[int, str, str]]:
    """(first line, INSTRUCTION, the rest) with ``\\`` continuations joined and comments left out."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines()[:MAX_LINES], 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = number
        pending.append(line.removesuffix("\\").strip())
        if line.endswith("\\"):
            continue
        instruction, _, rest = " ".join(pending).partition(" ")
        pending = []
        yield start, instruction.upper(), rest.strip()


def _env_pairs(path: str, line: int, rest: str, problems: list[Problem]) -> list[tuple[str, str]]:
    try:
        words = shlex.split(rest, posix=True)
    except ValueError as error:
        problems.append(
            Problem("ci-sources", f"{path}: ENV {rest[:60]!r}: {error}", locations=at(path, line))
        )
        return []
    if words and "=" not in words[0]:  # ENV NAME value (the legacy form)
        return [(words[0], " ".join(words[1:]))]
    return [(w.partition("=")[0], w.partition("=")[2]) for w in words if "=" in w]


def _unquoted(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else text


REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _filled(value: str, known: dict[str, str | None], source: str) -> Setting:
    missing = [m[1] or m[2] for m in REFERENCE.finditer(value) if known.get(m[1] or m[2]) is None]
    if missing:
        return Setting(None, source, f"names ${{{missing[0]}}}, which the Dockerfile does not set")
    return Setting(REFERENCE.sub(lambda m: str(known[m[1] or m[2]]), value), source)
