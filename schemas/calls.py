"""What a ``verify:`` entry's ``call`` may name, as text: nothing of it is ever evaluated.

Two forms, told apart by the colon a dotted name never holds:

* ``module.function``: a check the miles version offers (``verifiers:`` of its launch conventions),
  imported by its dotted name on the node;
* ``PATH.py:function``: a function a test of the checkout defines itself, ``PATH`` relative to the
  checkout's root in plain words (``tests/e2e/long/test_qwen3_0.6B_verifiers.py:verify``): a file
  name with a dot, which no dotted name can spell, is the reason for a path; loaded from that file
  on the node without running its ``__main__`` block.
"""

from __future__ import annotations

import re

LISTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
_WORD = (
    r"[A-Za-z0-9_][A-Za-z0-9_.+-]*"  # a folder or file name: no "..", no hidden name, nothing a shell expands
)
OWN = rf"(?:{_WORD}/)*{_WORD}\.py:[A-Za-z_][A-Za-z0-9_]*"
PATTERN = rf"^(?:{LISTED}|{OWN})$"
_FUNCTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(_WORD)


def is_own(call: str) -> bool:
    """Whether ``call`` names a test's own function by its file (``PATH.py:function``)."""
    return ":" in call


def function_of(call: str) -> str:
    """The function's name: after the colon of a test's own, else after the last dot."""
    return call.rpartition(":")[2] if is_own(call) else call.rpartition(".")[2]


def file_of(call: str) -> str:
    """The file of a test's own check, relative to the checkout (``tests/e2e/.../test_x.py``)."""
    return call.rpartition(":")[0]


def wrong(call: str) -> str | None:
    """Why ``call`` names nothing a verify job may call; None when it is one of the two forms."""
    if re.fullmatch(PATTERN, call):
        return None
    if not is_own(call):
        return (
            f"{call!r} is no dotted name (module.function of a check miles offers) and no PATH.py:function"
            " (a function of a test of the checkout)"
        )
    path, _, function = call.rpartition(":")
    parts = path.split("/")
    if call.count(":") > 1:
        why = "holds more than one colon (PATH.py:function has one)"
    elif path.startswith("/"):
        why = "is an absolute path: name the file relative to the checkout's root (tests/e2e/...)"
    elif ".." in parts:
        why = "leaves the checkout (..): name a file inside it, relative to its root"
    elif not path.endswith(".py"):
        why = "names no .py file"
    elif not all(_PART.fullmatch(part) for part in parts):
        why = (
            "holds a name that is empty, hidden or has characters other than letters, digits and _.+-"
            " (nothing a shell would expand)"
        )
    else:
        why = f"names no function after the colon ({function!r} is no Python name)"
    return f"{call!r} {why}"
