"""reads: a flag value read at launch from a file an earlier cell of the same spec wrote.

``ckpt-step: $${read-integer:/root/models/Qwen3-4B_miles/latest_checkpointed_iteration.txt}``:
a run-time reference, like ``$${NAME}`` (written with ``$$`` so the resolver leaves it alone),
whose value is the file's text when the cell launches (a regular file, no link on the way; what
it holds is never quoted in a message, as the path may name any file of the node) — stripped of
surrounding whitespace and required to be ASCII digits (``integer``, as miles' checkpoint tests
check with ``isdigit()``).
The cells of a spec run in order on one node, so a later cell reads what an earlier one saved
(``--save``). Nothing is evaluated: the form is matched, the path checked, the text converted.
Pure; ``run/reads.py`` reads the file on the node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

Conversion = Literal["integer"]
CONVERSIONS: tuple[Conversion, ...] = get_args(Conversion)
MAX_BYTES = 4096  # what a file read at launch may hold: an iteration number is a few digits
# ${read-CONVERSION:PATH}; the path's characters are checked apart, to say what is wrong with it
REFERENCE = re.compile(r"\$\{read-([A-Za-z0-9_-]*):([^}]*)\}")
_PLAIN_PATH = re.compile(r"^(/[A-Za-z0-9._+@,=-]+)+$")
VARIABLE_PREFIX = "RUN_MATRIX_READ_"  # the shell variable a rendered script reads the file into


@dataclass(frozen=True)
class Read:
    """One value read at launch: from which file, converted how."""

    conversion: str  # one of CONVERSIONS once checked (rule G8)
    path: str

    @property
    def reference(self) -> str:
        return f"${{read-{self.conversion}:{self.path}}}"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "as": self.conversion}


def reference(conversion: Conversion, path: str) -> str:
    """The token a launch holds where the value goes: ``${read-integer:/abs/path}``."""
    return Read(conversion, path).reference


def parse(token: str) -> Read | None:
    """The read ``token`` is, when its whole text is one read reference."""
    found = REFERENCE.fullmatch(token)
    return Read(found.group(1), found.group(2)) if found else None


def mentions(text: str) -> bool:
    """Whether ``text`` holds a read reference anywhere (a whole token or not)."""
    return REFERENCE.search(text) is not None


def path_problem(path: str) -> str | None:
    """What is wrong with a path to read at launch: it must be absolute and plain."""
    if not path.startswith("/"):
        return f"{path!r} is not an absolute path"
    parts = path.split("/")[1:]
    if any(part in ("", ".", "..") for part in parts):
        return f"{path!r} is not a plain path: no '..', '.' or empty parts"
    if not _PLAIN_PATH.match(path):
        return f"{path!r} is not a plain path: letters, digits and . _ + @ , = - only"
    return None


def conversion_problem(conversion: str) -> str | None:
    if conversion in CONVERSIONS:
        return None
    return f"read-{conversion} converts nothing run-matrix knows: write read-{' or read-'.join(CONVERSIONS)}"


def convert(text: str, conversion: str) -> str:
    """The flag's token from the file's text; ValueError saying why when the text does not fit."""
    if conversion != "integer":
        raise ValueError(conversion_problem(conversion))
    value = text.strip()
    if not value or not value.isascii() or not value.isdigit():  # what it holds is never quoted: any file
        raise ValueError("does not hold an integer (digits only, surrounding whitespace stripped)")
    return value


def under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (both absolute, as written)."""
    folder = folder.rstrip("/")
    return bool(folder) and (path + "/").startswith(folder + "/")


def variable(flag: str) -> str:
    """The shell variable a rendered script reads the value of ``--flag`` into."""
    return VARIABLE_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", flag).upper()
