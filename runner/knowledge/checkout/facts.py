"""facts: the git facts run-matrix asks of a checkout — its commit, its commit's date, whether it
contains a commit, branch or tag — from ``refs`` (read as files) and ``git`` (hardened)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.knowledge.checkout import git, refs
from runner.knowledge.checkout.tree import CheckoutError, Tree


@dataclass(frozen=True)
class Containment:
    """Whether a checkout's HEAD contains a commit, and why, in words that quote nothing read."""

    met: bool
    detail: str


def head_commit(root: Path) -> str | None:
    """The commit HEAD names, read from ``.git`` (an object id, never other text); None if unknown."""
    try:
        return refs.head(Tree.at(root))
    except CheckoutError:
        return None


def identity(root: Path) -> tuple[str, str] | None:
    """``(commit, YYYY-MM-DD)`` of the checkout's HEAD, else None."""
    try:
        tree = Tree.at(root)
    except CheckoutError:
        return None
    found = refs.head(tree)
    commit = git.commit(tree, found) if found else None
    day = git.date(tree, commit) if commit else None
    return (commit, day) if commit and day else None


def contains(root: Path, ref: str, what: str = "the checkout") -> Containment:
    """Whether the checkout's HEAD contains ``ref`` (a commit id, a branch, a tag; ``origin/`` tried
    after the name itself, as a fetched but not checked-out branch is there)."""
    try:
        tree = Tree.at(root)
        refs.git_dir(tree)
    except CheckoutError as exc:
        why = f" run-matrix reads ({exc})" if (root / ".git").exists() else ""
        return Containment(False, f"{what} {root} is not a git checkout{why}, so {ref} cannot be checked")
    if not (refs.valid_ref(ref) or refs.OBJECT_ID.fullmatch(ref)):
        return Containment(False, f"{ref!r} is not a commit id or a ref name git accepts")
    head = refs.head(tree)
    head_commit = git.commit(tree, head) if head else None
    if head_commit is None:
        return Containment(
            False, f"{what} {root} has no HEAD commit run-matrix can read, so {ref} cannot be checked"
        )
    found = refs.resolve(tree, ref) or refs.resolve(tree, f"origin/{ref}")
    commit = git.commit(tree, found) if found else None
    if commit is None:
        return Containment(False, f"{what} {root} does not know {ref}: fetch it (git fetch origin {ref})")
    contained = git.is_ancestor(tree, commit, head_commit)
    verb = "contains" if contained else "does not contain"
    return Containment(contained, f"{what} {root} {verb} {ref} ({commit[:12]})")
