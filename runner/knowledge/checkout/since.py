"""since: the files a repository changed since a ref (``--since REF``), told by the hardened git.

Two repositories are asked: a miles checkout (a stranger's: its ``.git`` must lie in the tree, as
:func:`refs.git_dir` holds), and the spec repository (the user's own, which run-matrix trusts: a
worktree's ``.git`` file may point to the repository it belongs to). Both are read alike: refs as
files, validated, and git run on a repository of ours over their object folders (``git.py``), so
neither one's configuration can make git run a program. The changes are those of HEAD since it
forked from REF (``git diff REF...HEAD``): what a pull request changed, whatever REF did since.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from runner.errors import EnvironmentProblem, UsageError
from runner.knowledge.checkout import git, refs
from runner.knowledge.checkout.tree import CheckoutError, Tree

MAX_SHOWN = 60  # characters of a ref name a message quotes


@dataclass(frozen=True)
class Repository:
    """A work tree (``root``) and where its git directories lie: ``own`` (HEAD) and ``common`` (refs,
    objects), both relative to ``tree``."""

    root: Path
    tree: Tree
    own: PurePosixPath
    common: PurePosixPath


def checkout(root: Path) -> Repository:
    """A miles checkout's repository: its ``.git`` in the tree, or refused (NotGit)."""
    tree = Tree.at(root)
    own, common = refs.git_dir(tree)
    return Repository(tree.root, tree, own, common)


def own(root: Path) -> Repository:
    """The spec repository: as a checkout, else a worktree whose ``.git`` file names its git folder."""
    resolved = root.resolve()
    dot = resolved / ".git"
    if dot.is_dir() or not dot.is_file():
        if not dot.is_dir():
            raise refs.NotGit(f"{root} is not a git repository (it has no .git)")
        return checkout(resolved)
    first = dot.read_text(encoding="utf-8", errors="replace")[: refs.MAX_REF_BYTES].partition("\n")[0]
    if not first.startswith("gitdir:"):
        raise refs.NotGit(f"{dot} does not name a git folder (gitdir: ...)")
    folder = (resolved / first.removeprefix("gitdir:").strip()).resolve()
    pointer = folder / "commondir"
    common = (
        (folder / pointer.read_text(encoding="utf-8")[: refs.MAX_REF_BYTES].strip()).resolve()
        if pointer.is_file()
        else folder
    )
    if not folder.is_relative_to(common):
        raise refs.NotGit(f"{dot}: its git folder {folder} is not inside {common}")
    tree = Tree.at(common)
    return Repository(
        resolved, tree, PurePosixPath(folder.relative_to(common).as_posix()), PurePosixPath(".")
    )


def changed(repository: Repository, ref: str, option: str = "--since") -> tuple[str, ...]:
    """The paths (relative to ``repository.root``) HEAD changed since it forked from ``ref``."""
    if not (refs.valid_ref(ref) or refs.OBJECT_ID.fullmatch(ref)):
        raise UsageError(
            f"{option} {shown(ref)}: not a commit id (40 hex digits) or a ref name git accepts "
            "(a branch, a tag, origin/main; no ~, ^, .., spaces or control characters)"
        )
    tree, mine, common = repository.tree, repository.own, repository.common
    head = _commit(repository, refs.resolve_in(tree, mine, common, "HEAD"))
    if head is None:
        raise EnvironmentProblem(f"{repository.root}: HEAD names no commit run-matrix can read")
    named = refs.resolve_in(tree, mine, common, ref) or refs.resolve_in(tree, mine, common, f"origin/{ref}")
    since = _commit(repository, named)
    if since is None:
        raise UsageError(
            f"{option} {shown(ref)}: {repository.root} has no such commit, branch or tag "
            "(fetch it first: a shallow clone holds only its own commit)"
        )
    base = git.merge_base(tree, since, head, common) or since
    found = git.changed_paths(tree, base, head, common)
    if found is None:
        raise EnvironmentProblem(
            f"{repository.root}: git could not list the files changed since {shown(ref)}"
        )
    return found


def _commit(repository: Repository, object_id: str | None) -> str | None:
    try:
        return git.commit(repository.tree, object_id, repository.common) if object_id else None
    except CheckoutError:
        return None


def shown(ref: str) -> str:
    """A ref name as a message may quote it: bounded, control characters escaped."""
    text = ref if len(ref) <= MAX_SHOWN else f"{ref[:MAX_SHOWN]}..."
    return repr(text)
