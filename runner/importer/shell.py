"""shell: a command line's words as the shell splits them, each text split once per process.

An import splits the same launch many times (its tokens, its groups, the version it follows, each
side and variant); a suite import, thousands of times. ``shlex`` is pure Python and slow.
"""

from __future__ import annotations

import shlex

from runner.memos import remember


def split(text: str) -> list[str]:
    """``shlex.split(text)``; raises its ValueError for a text the shell cannot split."""
    return list(_split(text))


@remember("pure", "shlex.split of a text: a function of the text alone", maxsize=4096)
def _split(text: str) -> tuple[str, ...]:
    return tuple(shlex.split(text))
