"""What mbridge's bridge registry holds, for import's stand-in of mbridge to answer.

mbridge picks a model's bridge from its registry (``mbridge.core.bridge._MODEL_REGISTRY``), which
``@register_model(...)`` fills as mbridge's modules import. miles' images install mbridge from git at a
commit their ``docker/Dockerfile*`` pin; run-matrix ships the model types mbridge registers itself at
that commit (``miles/import.yaml`` ``mbridge:``). The answer is that list, for a checkout whose
Dockerfiles pin that commit (without a checkout: the recorder's miles, which does). A checkout that
pins another commit, or none, gets the reason instead, and the stand-in refuses the question with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runner.knowledge.checkout import CheckoutError, Tree

DOCKERFILES = ("docker", "Dockerfile*")  # where miles' images install their packages
PIN = re.compile(r"ISEEKYAN/mbridge(?:\.git)?@([0-9A-Fa-f]{7,40})\b")
SHIPPED = "miles/import.yaml mbridge:"


def answer(tree: Tree | None, commit: str, registered: Sequence[str]) -> dict[str, Any]:
    """For the stand-in (``missing.py``'s ``MBRIDGE_VARIABLE``): ``{"commit", "registered"}`` when the
    checkout installs the mbridge ``commit`` whose own ``registered`` types run-matrix ships, else
    ``{"unknown": why}``."""
    if tree is None:
        return {"commit": commit, "registered": list(registered)}
    try:
        pins = _pins(tree)
    except CheckoutError as error:
        return {"unknown": f"its mbridge pin cannot be read: {error}"}
    other = [(where, pin) for where, pin in pins if not commit.startswith(pin.lower())]
    if other:
        where, pin = other[0]
        return {
            "unknown": f"the checkout's {where} installs mbridge {pin}, and run-matrix ships the registry"
            f" of mbridge {commit[:8]} only ({SHIPPED})"
        }
    if not pins:
        return {
            "unknown": "the checkout's docker/Dockerfile* pin no mbridge commit (`ISEEKYAN/mbridge.git@`),"
            f" and run-matrix ships the registry of mbridge {commit[:8]} only ({SHIPPED})"
        }
    return {"commit": commit, "registered": list(registered)}


def _pins(tree: Tree) -> list[tuple[str, str]]:
    """Each mbridge commit the checkout's Dockerfiles install (``file:line``, the commit as written)."""
    found = []
    for path in tree.files(*DOCKERFILES):
        for number, line in enumerate(tree.read_text(path).splitlines(), 1):
            found += [(f"{path}:{number}", match.group(1)) for match in PIN.finditer(line)]
    return found
