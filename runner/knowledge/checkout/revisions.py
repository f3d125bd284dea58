"""revisions: a checkout's commits as ``bisect`` needs them — a revision named on the command line,
the first-parent history between two, each commit's subject, and its tree written out to a folder.

A revision is a full object id, an abbreviated one (hex), ``HEAD``, or a ref name git accepts
(``main``, ``v1.2``, ``origin/main``), read from ``.git`` as files (``refs.py``); anything else
(``HEAD~3``, ``@{1}``, text with spaces) is refused before git sees it. A subject is the
checkout's text: a caller prints it through ``errors.printable``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.errors import EnvironmentProblem, UsageError
from runner.knowledge.checkout import git, refs
from runner.knowledge.checkout.tree import CheckoutError, Tree

MAX_SHOWN = 60  # characters of a revision a message quotes
PULL_REQUEST = re.compile(r"\(#(\d{1,7})\)\s*$|^Merge pull request #(\d{1,7})\b")


@dataclass(frozen=True)
class Commit:
    id: str
    subject: str  # the checkout's text, as git prints it (never shown unescaped)

    @property
    def pull_request(self) -> int | None:
        """The PR number a subject names as GitHub writes it: ``... (#123)``, ``Merge pull request #123``."""
        found = PULL_REQUEST.search(self.subject)
        return int(found[1] or found[2]) if found else None


def repository(root: Path) -> Tree:
    """The checkout's tree, when it is a git checkout run-matrix reads (exit 3 else)."""
    try:
        tree = Tree.at(root)
        refs.git_dir(tree)
    except CheckoutError as exc:
        raise EnvironmentProblem(f"the miles checkout {root} is not a git checkout: {exc}") from None
    return tree


def commit(tree: Tree, revision: str, option: str) -> str:
    """The commit ``revision`` names; a usage error (exit 2) saying why when it names none."""
    shown = _shown(revision)
    if not (revision == "HEAD" or refs.valid_ref(revision) or re.fullmatch(r"[0-9a-f]{4,64}", revision)):
        raise UsageError(
            f"{option} {shown}: not a commit id or a ref name git accepts (a branch, a tag, origin/main;"
            " no ~, ^, .., spaces or control characters)"
        )
    named = refs.resolve(tree, revision) if revision != "HEAD" else refs.head(tree)
    named = named or (refs.resolve(tree, f"origin/{revision}") if revision != "HEAD" else None)
    found = git.commit(tree, named) if named else None
    if found is None and re.fullmatch(r"[0-9a-f]{4,39}", revision):
        found = git.abbreviated(tree, revision)
    if found is None:
        raise UsageError(
            f"{option} {shown}: the checkout {tree.root} has no such commit, branch or tag"
            " (an abbreviated id must name one commit; fetch it first: a shallow clone holds little history)"
        )
    return found


def between(tree: Tree, good: str, bad: str) -> tuple[str, ...]:
    """The first-parent history from ``good`` to ``bad`` (both included), oldest first."""
    if good == bad:
        raise UsageError(f"--good and --bad name one commit ({good[:12]}): nothing lies between them")
    found = git.first_parents(tree, good, bad)
    if found is None:
        raise EnvironmentProblem(
            f"{tree.root}: git could not list the history from {good[:12]} to {bad[:12]}"
        )
    if not found:
        if git.is_ancestor(tree, bad, good):
            raise UsageError(
                f"--good {good[:12]} comes after --bad {bad[:12]}: swap them (the good commit is the older)"
            )
        raise UsageError(
            f"--good {good[:12]} is not on the first-parent history of --bad {bad[:12]} (bisect follows"
            " the first parents: name a commit of the branch itself, such as the merge of the branch)"
        )
    return (good, *found)


def described(tree: Tree, object_id: str) -> Commit:
    return Commit(object_id, git.subject(tree, object_id))


def write_tree(tree: Tree, object_id: str, into: Path) -> None:
    """Commit ``object_id``'s files in the empty folder ``into``; exit 3 when git cannot write them."""
    if not git.export(tree, object_id, into):
        raise EnvironmentProblem(f"{tree.root}: git could not write the files of {object_id[:12]} to {into}")


def _shown(revision: str) -> str:
    text = revision if len(revision) <= MAX_SHOWN else f"{revision[:MAX_SHOWN]}..."
    return repr(text)
