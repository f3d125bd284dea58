"""documents: a document from outside read within a size and a depth budget; JSON here, YAML in
:mod:`runner.spec.yaml_documents` (apart, so that a reader of JSON alone never loads PyYAML).

Every reader of text run-matrix did not write just now (a checkout's workflow, a trace a sandboxed
script wrote, a run's state record, a cache entry) goes through one function per format. The
budgets are checked before the parser that could exceed them runs: the text's length first, then
its nesting, counted without recursion (JSON's brackets outside strings; YAML's events, then the
composed nodes with aliases expanded), so that neither Python's recursion limit nor memory is ever
what stops a hostile document. Each failure is :class:`Unreadable`, a ``ValueError`` with the
reason and, where the parser knows it, the line; a caller names the file and the format
(``x.yml does not parse as YAML: nests deeper than 100 levels``).

No TOML is read anywhere in run-matrix (``pyproject.toml`` is only searched for a name).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_DEPTH = 100  # nesting of lists and mappings: a trace nests about 8 deep, a workflow about 10

# what json's scanner nests by, found in C on the UTF-8 bytes: escapes (``\"``) dropped, then every
# byte but brackets and quotes, then the strings: the brackets left are those outside strings
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_A_BRACKET_OR_QUOTE = bytes(c for c in range(256) if c not in b'[]{}"')


class Unreadable(ValueError):
    """A document that is not one within the budgets: why, and on which line when that is known."""

    def __init__(self, reason: str, line: int | None = None, *, budget: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.budget = budget  # past a budget (size, depth, values), not a syntax error


def file_bytes(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (a FIFO would block, a device never
    end): OSError when it is none; a document read from them meets ``limit`` as its size budget."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return stream.read(limit + 1)


def json_data(text: str | bytes, limit: int, depth: int = MAX_DEPTH) -> Any:
    """The value of the JSON document ``text``: at most ``limit`` characters, nesting ``depth`` deep."""
    text = text_of(text, limit)
    _within_depth(text, depth)
    try:
        return json.loads(text)
    except ValueError as error:  # json.JSONDecodeError, and a number of more than 4,300 digits
        line = error.lineno if isinstance(error, json.JSONDecodeError) else None
        raise Unreadable(str(error), line) from None


def text_of(text: str | bytes, limit: int) -> str:
    """``text`` as a string, within ``limit``: the one size check of every reader here."""
    if len(text) > limit:
        raise Unreadable(f"larger than {limit:,} bytes", budget=True)
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"not UTF-8: byte {text[error.start]:#x} at offset {error.start}") from None


def _within_depth(text: str, depth: int) -> None:
    """Each pass strips the innermost pairs: a document ``d`` deep is done in ``d`` passes; what is
    left after ``depth`` of them (deeper, or brackets that do not pair) is counted one by one."""
    marks = _ESCAPE.sub(b"", text.encode("utf-8", "surrogatepass")).translate(None, _NOT_A_BRACKET_OR_QUOTE)
    marks = marks.replace(b'""', b"")  # two quotes less before what follows: outside stays outside
    brackets = left = b"".join(marks.split(b'"')[::2])  # after an even number of quotes: outside
    for _ in range(depth):
        if not left:
            return
        left = left.replace(b"[]", b"").replace(b"{}", b"")  # the innermost pairs, all else gone
    level = 0
    for bracket in brackets if left else b"":
        level += 1 if bracket in b"[{" else -1
        if level > depth:
            raise Unreadable(f"nests deeper than {depth} levels", budget=True)
