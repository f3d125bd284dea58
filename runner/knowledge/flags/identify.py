"""Which miles a checkout is, from what it holds: its HEAD when that is a shipped version, else the
shipped version whose miles flags it has exactly, else (for words only) its HEAD commit, else
"an unshipped miles". No git history is needed: the two versions compared may sit on different
branches, and a checkout may be a tarball without ``.git``."""

from __future__ import annotations

from pathlib import Path

from runner.knowledge import versions
from runner.knowledge.checkout import head_commit
from runner.knowledge.flags import load, shipped
from runner.knowledge.flags.catalog import Catalog

UNSHIPPED = "an unshipped miles"


def shipped_version(root: Path, catalog: Catalog) -> str | None:
    """The shipped version (its commit prefix) the checkout at ``root``, whose flags are
    ``catalog``, is; None when neither its HEAD nor its miles flags name exactly one."""
    known = versions.shipped(shipped())
    head = head_commit(root)
    by_head = versions.matching(head, known) if head else []
    if len(by_head) == 1:
        return by_head[0].commit
    own = miles_flags(catalog)
    same = [v for v in known if miles_flags(load(v.path)) == own]
    return same[0].commit if len(same) == 1 else None


def named(root: Path, catalog: Catalog) -> str:
    """The checkout in words: a shipped version, else its HEAD commit, else ``UNSHIPPED``."""
    found = shipped_version(root, catalog)
    if found:
        return found
    head = head_commit(root)
    return head[:8] if head else UNSHIPPED


def miles_flags(catalog: Catalog) -> frozenset[str]:
    """The spellings of miles' own flags (Megatron's and SGLang's do not tell miles versions apart)."""
    return frozenset(f.name for f in catalog.flags if f.program == "miles")
