"""run_id: a launch flag that names its run by the clock, one name per attempt.

``save: /root/out/$${run-id}/checkpoints``: a run-time reference, like ``$${prepared:FUNCTION}``
(written with ``$$`` so the resolver leaves it alone), replaced, when the job is submitted, by a
name made for that attempt in the form of miles' ``create_run_id()``: the UTC clock and three random
digits (``261205-071530-042``). A retried attempt gets a new one, as upstream's retry starts the
process again. It may stand anywhere inside a flag's text of ``args``, and nowhere else. Pure but for
``new``; ``run/cell_run.py`` fills the flags, ``render`` and ``script`` write the same as shell
(``RUN_MATRIX_RUN_ID``, set once unless the caller set it).
"""

from __future__ import annotations

import datetime
import itertools
import re
import secrets
from collections.abc import Sequence

from schemas.spec import Spec

REFERENCE = "${run-id}"
MARK = "${run-id"  # any reference, well-formed or not, to say what is wrong with it
FORM = "write $${run-id} in a flag's value (a name per attempt: the clock and three random digits)"
VARIABLE = "RUN_MATRIX_RUN_ID"  # the shell variable a rendered script names the run by
PATTERN = re.compile(r"\d{6}-\d{6}-\d{3}")  # 261205-071530-042, as create_run_id() makes it
# what the rendered script runs to make one, as run does: UTC, two-digit year, three random digits
SHELL_NEW = "$(date -u +%y%m%d-%H%M%S)-$(printf %03d $((RANDOM % 1000)))"


def new(previous: str = "") -> str:
    """A fresh name in ``create_run_id()``'s form, never ``previous`` (a retry within the second)."""
    while True:
        now = datetime.datetime.now(datetime.timezone.utc)
        made = f"{now:%y%m%d-%H%M%S}-{secrets.randbelow(1000):03d}"
        if made != previous:
            return made


def mentions(text: str) -> bool:
    """Whether ``text`` holds a run-id reference, well-formed or not."""
    return MARK in text


def problem(text: str) -> str | None:
    """What is wrong with the run-id references ``text`` holds; None when each is ``${run-id}``."""
    if text.count(MARK) == text.count(REFERENCE):
        return None
    return f"{text!r} holds {MARK} other than as {REFERENCE}, which is all a run's name is written as"


def in_flag(place: Sequence[str]) -> bool:
    """Whether ``place`` (a key of the spec's JSON) is a flag's value of ``args`` or an item of it."""
    return place[:1] == ("args",) and len(place) in (3, 4)


def flags(spec: Spec) -> list[str]:
    """The flags (``--NAME``, each once, in launch order) whose value holds ``${run-id}``."""
    found = []
    for _, values in spec.args.groups():
        for name, value in values.items():
            items = value if isinstance(value, list) else [value]
            if any(isinstance(item, str) and REFERENCE in item for item in items):
                found.append(f"--{name}")
    return found


def filled(argv: Sequence[str], name: str) -> tuple[str, ...]:
    """``argv`` with each reference replaced by this attempt's ``name``."""
    return tuple(token.replace(REFERENCE, name) for token in argv)


def for_shell(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` with each reference as the ``${RUN_MATRIX_RUN_ID}`` a rendered script sets."""
    return tuple(token.replace(REFERENCE, f"${{{VARIABLE}}}") for token in argv)


def values(argv: Sequence[str], flags: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(flag, its value as the job got it) of each of ``flags`` in ``argv`` (a list's items joined)."""
    found = []
    for index, token in enumerate(argv):
        if token in flags:
            items = itertools.takewhile(lambda item: not item.startswith("--"), argv[index + 1 :])
            found.append((token, " ".join(items)))
    return tuple(found)
