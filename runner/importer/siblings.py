"""siblings: the CUDA case a folder's AMD variant (``test_amd_*.py``) is written as an overlay of.

The first CUDA case its docstring names ("AMD 4-GPU variant of test_deepep_fp8_bridge.py"), else the
case whose imported launch differs from its own in the fewest flags.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.knowledge import checkout
from runner.spec.load import load

AMD_PREFIX = "test_amd_"
SIBLING = re.compile(r"\btest_\w+\.py\b")


def named_sibling(test: Path, cuda: list[Path]) -> Path | None:
    """The CUDA case an AMD variant's docstring names first, if any."""
    named = {t.name: t for t in cuda}
    for mention in SIBLING.findall(_docstring(test)):
        if mention in named:
            return named[mention]
    return None


def nearest(alone: Path, cuda: list[Path], alone_of: Callable[[Path], Path]) -> Path:
    """The CUDA case whose launch differs from the AMD variant's (imported ``alone``) in fewest flags."""
    flags = _flags(load(alone).data)
    return min(cuda, key=lambda t: _distance(flags, _flags(load(alone_of(t)).data)))


def _docstring(test: Path) -> str:
    """The test's docstring, read through the door (its folder as the tree: a link out is not read)."""
    return checkout.docstring(checkout.Tree.at(test.parent), test.name)


def _flags(data: dict[str, Any]) -> dict[str, Any]:
    return {flag: value for group in (data.get("args") or {}).values() for flag, value in group.items()}


def _distance(a: dict[str, Any], b: dict[str, Any]) -> int:
    return sum(a.get(flag) != b.get(flag) for flag in {*a, *b})
