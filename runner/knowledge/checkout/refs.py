"""refs: a checkout's HEAD and refs, read from its ``.git`` as files; no git command runs.

A ref name is validated as ``git check-ref-format`` validates one before it names a file, so a
``HEAD`` of ``ref: /etc/shadow`` or ``ref: refs/../../x`` names nothing. What is returned is an object
id (hex) or None: the content of a file that is not one is never returned, so nothing read here can
carry a host file's text into a message, a report or the history store. The git directory is
``.git`` of the root, or where a ``.git`` file (``gitdir: PATH``: a worktree, a submodule) points
when that stays in the tree; a git directory elsewhere is not read (:func:`git_dir` says why).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from runner.knowledge.checkout.tree import CheckoutError, Tree

MAX_REF_BYTES = 4096  # HEAD, a loose ref, .git, commondir: one line each
MAX_PACKED_BYTES = 64 * 1024 * 1024  # packed-refs of a large repository is megabytes
MAX_SYMREF_DEPTH = 5  # git's own limit on symbolic refs pointing at symbolic refs
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


class NotGit(CheckoutError):
    """The checkout's git facts cannot be read (no ``.git``, or one that leads out of the tree)."""


def valid_ref(name: str) -> bool:
    """Whether ``name`` is a ref name git accepts (``git check-ref-format``'s rules)."""
    if not name or name == "@" or name.endswith(("/", ".")) or "@{" in name or "//" in name:
        return False
    if _FORBIDDEN.search(name) or ".." in name:
        return False
    return all(part and not part.startswith(".") and not part.endswith(".lock") for part in name.split("/"))


def git_dir(tree: Tree) -> tuple[PurePosixPath, PurePosixPath]:
    """The git directory and the common one (a worktree keeps branches there), both in the tree."""
    if tree.is_dir(".git"):
        own = PurePosixPath(tree.locate(".git").relative_to(tree.root).as_posix())
    elif tree.is_file(".git"):
        own = _pointed(tree, PurePosixPath("."), ".git", "gitdir:")
    else:
        raise NotGit(f"{tree.root} has no .git")
    common = _pointed(tree, own, str(own / "commondir"), "") if tree.is_file(own / "commondir") else own
    return own, common


def head(tree: Tree) -> str | None:
    """The object id HEAD names, or None (no git, an unborn branch, anything not a valid ref)."""
    try:
        own, common = git_dir(tree)
    except NotGit:
        return None
    return _follow(tree, own, common, "HEAD", MAX_SYMREF_DEPTH)


def resolve(tree: Tree, name: str) -> str | None:
    """The object id of a full ref name (``refs/...``) or an object id given in full; None when it
    is neither, or unknown. Short names are tried as git tries them (:func:`candidates`)."""
    if OBJECT_ID.fullmatch(name):
        return name
    try:
        own, common = git_dir(tree)
    except NotGit:
        return None
    return resolve_in(tree, own, common, name)


def resolve_in(tree: Tree, own: PurePosixPath, common: PurePosixPath, name: str) -> str | None:
    """:func:`resolve` in the git directories ``own`` and ``common`` (relative to the tree);
    ``HEAD`` is read from ``own``."""
    if OBJECT_ID.fullmatch(name):
        return name
    for full in ("HEAD",) if name == "HEAD" else candidates(name):
        found = _follow(tree, own, common, full, MAX_SYMREF_DEPTH)
        if found is not None:
            return found
    return None


def candidates(name: str) -> tuple[str, ...]:
    """The full ref names git's rev-parse tries for ``name``, valid ones only, in its order."""
    tried = (name, f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}", f"refs/remotes/{name}")
    return tuple(full for full in tried if full.startswith("refs/") and valid_ref(full))


def _follow(tree: Tree, own: PurePosixPath, common: PurePosixPath, name: str, depth: int) -> str | None:
    text = _loose(tree, own, common, name)
    if text is None:
        return _packed(tree, common, name)
    if OBJECT_ID.fullmatch(text):
        return text
    target = text.removeprefix("ref:").strip() if text.startswith("ref:") else ""
    if depth <= 0 or not target.startswith("refs/") or not valid_ref(target):
        return None
    return _follow(tree, own, common, target, depth - 1)


def _loose(tree: Tree, own: PurePosixPath, common: PurePosixPath, name: str) -> str | None:
    """The first line of a loose ref (HEAD and per-worktree refs in ``own``, the rest in ``common``)."""
    for folder in dict.fromkeys((own, common)):
        try:
            return tree.read_bytes(folder / name, MAX_REF_BYTES).decode("ascii").strip()
        except (CheckoutError, UnicodeDecodeError):
            continue
    return None


def _packed(tree: Tree, common: PurePosixPath, name: str) -> str | None:
    try:
        text = tree.read_bytes(common / "packed-refs", MAX_PACKED_BYTES).decode("ascii", "replace")
    except CheckoutError:
        return None
    for line in text.splitlines():
        found, _, ref = line.partition(" ")
        if ref == name and OBJECT_ID.fullmatch(found):
            return found
    return None


def _pointed(tree: Tree, base: PurePosixPath, file: str, prefix: str) -> PurePosixPath:
    """The folder a ``.git`` or ``commondir`` file names, when it stays in the tree."""
    try:
        text = tree.read_bytes(file, MAX_REF_BYTES).decode("utf-8").strip()
    except (CheckoutError, UnicodeDecodeError):
        raise NotGit(f"{file} of {tree.root} cannot be read") from None
    if not text.startswith(prefix):
        raise NotGit(f"{file} of {tree.root} does not start with {prefix!r}")
    named = text.removeprefix(prefix).strip()
    target = Path(named) if named.startswith("/") else tree.root / base / named
    if "\0" in named or not target.resolve().is_relative_to(tree.root) or not target.resolve().is_dir():
        raise NotGit(
            f"{file} of {tree.root} points outside it: git facts are read only from a git directory"
            " in the checkout (clone it, rather than using a worktree of another repository)"
        )
    return PurePosixPath(target.resolve().relative_to(tree.root).as_posix())
