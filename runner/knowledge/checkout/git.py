"""git: what only git can tell of a checkout (is one commit an ancestor of another, a commit's
date), asked of a git that cannot be made to run anything.

Why not run ``git -C CHECKOUT``: git then reads the checkout's ``.git/config``, and that file names
programs (``core.fsmonitor``, ``core.sshCommand`` with a promisor remote's lazy fetch, hooks,
``include.path`` to more of the same). Not a single key of it is needed to walk commits, so git is
given none of it: ``GIT_DIR`` is a fresh folder of ours whose ``config`` we write, whose ``objects/``
holds links to the checkout's object folders (the 256 fan-out folders and ``pack/``, each checked to
lie in the tree) but not ``info/`` — so no ``alternates`` (objects elsewhere on the host), no
``commit-graph`` — and whose ``shallow`` is the checkout's, its lines checked to be object ids.
System and global config are off (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``, a
fresh ``HOME``), the environment is ours only (no caller's ``GIT_*``), lazy fetch is off
(``GIT_NO_LAZY_FETCH``; and no remote is configured to fetch from), hooks and fsmonitor are off
on the command line too, and git is given object ids only, never a name from the checkout. What git
reads of the checkout is then object files: the worst they can do is make an answer wrong (or git
fail or time out: :data:`TIMEOUT_S`), never run a program or show a host file. A folder swapped for
a link after the check could point git at other object files: still only object files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from runner.knowledge.checkout import refs
from runner.knowledge.checkout.tree import CheckoutError, Tree

MAX_DIFF_CHARS = 16 * 1024 * 1024  # the names a diff of two commits may print (miles: kilobytes)
MAX_COMMITS = 100_000  # of a first-parent range (miles main has a few thousand commits in all)
MAX_SUBJECT = 1000  # characters of a commit's subject line
TIMEOUT_S = 20.0  # an ancestry walk of miles' history takes milliseconds
EXPORT_TIMEOUT_S = 120.0  # writing one commit's tree (miles: ~1,500 files, well under a second)
CONFIG = """\
[core]
\trepositoryformatversion = 0
\tbare = true
\thooksPath = /dev/null
\tfsmonitor = false
[protocol]
\tallow = never
"""
HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.allow=never")


def commit(tree: Tree, object_id: str, common: PurePosixPath | None = None) -> str | None:
    """The commit ``object_id`` is or peels to (an annotated tag), if the checkout has it."""
    if not refs.OBJECT_ID.fullmatch(object_id):
        return None
    done = _git(tree, "rev-parse", "--verify", "--quiet", f"{object_id}^{{commit}}", common=common)
    found = done.strip() if done is not None else ""
    return found if refs.OBJECT_ID.fullmatch(found) else None


def is_ancestor(tree: Tree, ancestor: str, descendant: str) -> bool:
    """Whether commit ``ancestor`` is reachable from ``descendant`` (both object ids)."""
    if not (refs.OBJECT_ID.fullmatch(ancestor) and refs.OBJECT_ID.fullmatch(descendant)):
        return False
    return _git(tree, "merge-base", "--is-ancestor", ancestor, descendant) is not None


def date(tree: Tree, object_id: str) -> str | None:
    """The committer date (YYYY-MM-DD) of commit ``object_id``."""
    if not refs.OBJECT_ID.fullmatch(object_id):
        return None
    done = _git(tree, "log", "-1", "--no-show-signature", "--format=%cs", object_id, "--")
    found = done.strip() if done is not None else ""
    return found if len(found) == 10 and found[4] == "-" and found[7] == "-" else None


def merge_base(tree: Tree, one: str, other: str, common: PurePosixPath | None = None) -> str | None:
    """The best common ancestor of commits ``one`` and ``other`` (object ids), if there is one."""
    if not (refs.OBJECT_ID.fullmatch(one) and refs.OBJECT_ID.fullmatch(other)):
        return None
    done = _git(tree, "merge-base", one, other, common=common)
    found = done.strip() if done is not None else ""
    return found if refs.OBJECT_ID.fullmatch(found) else None


def changed_paths(
    tree: Tree, before: str, after: str, common: PurePosixPath | None = None
) -> tuple[str, ...] | None:
    """The paths (relative to the repository's root) whose content differs between commits ``before``
    and ``after``; a rename counts as both names. None when git cannot tell."""
    if not (refs.OBJECT_ID.fullmatch(before) and refs.OBJECT_ID.fullmatch(after)):
        return None
    args = ("diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-ext-diff", "--no-textconv")
    done = _git(tree, *args, before, after, "--", common=common, limit=MAX_DIFF_CHARS)
    if done is None or len(done) >= MAX_DIFF_CHARS:
        return None
    return tuple(name for name in done.split("\0") if name)


def first_parents(tree: Tree, good: str, bad: str) -> tuple[str, ...] | None:
    """The first-parent history after commit ``good`` up to ``bad`` (object ids), oldest first; None
    when git cannot tell, () when ``good`` is not on ``bad``'s first-parent line."""
    if not (refs.OBJECT_ID.fullmatch(good) and refs.OBJECT_ID.fullmatch(bad)):
        return None
    args = ("rev-list", "--first-parent", "--parents", f"--max-count={MAX_COMMITS}", bad, f"^{good}", "--")
    done = _git(tree, *args, limit=MAX_DIFF_CHARS)
    if done is None:
        return None
    lines = [line.split() for line in done.splitlines() if line.strip()]
    if (
        not lines
        or len(lines) >= MAX_COMMITS
        or not all(refs.OBJECT_ID.fullmatch(w) for ws in lines for w in ws)
    ):
        return ()
    oldest = lines[-1]
    return tuple(ids[0] for ids in reversed(lines)) if oldest[1:2] == [good] else ()


def subject(tree: Tree, object_id: str) -> str:
    """The first line of commit ``object_id``'s message ("" when git cannot tell): text of the
    checkout's, which a caller prints only through ``errors.printable``."""
    if not refs.OBJECT_ID.fullmatch(object_id):
        return ""
    done = _git(tree, "log", "-1", "--no-show-signature", "--format=%s", object_id, "--", limit=MAX_SUBJECT)
    return (done or "").strip()


def abbreviated(tree: Tree, prefix: str) -> str | None:
    """The commit an abbreviated object id (hex, 4 to 39 digits) names, when exactly one does."""
    if not re.fullmatch(r"[0-9a-f]{4,39}", prefix):
        return None
    done = _git(tree, "rev-parse", "--verify", "--quiet", f"{prefix}^{{commit}}")
    found = done.strip() if done is not None else ""
    return found if refs.OBJECT_ID.fullmatch(found) else None


def export(tree: Tree, object_id: str, into: Path) -> bool:
    """Write commit ``object_id``'s tree into the empty folder ``into`` (its index kept in our own git
    folder); whether it worked. No filter, hook or program of the checkout runs: the configuration is
    ours (``CONFIG``), which names none, so a ``.gitattributes`` filter has no driver, and hooks are
    off (``HARDENING``)."""
    if not refs.OBJECT_ID.fullmatch(object_id):
        return False
    return (
        _git(tree, "checkout", "--quiet", object_id, "--", ".", work_tree=into, timeout=EXPORT_TIMEOUT_S)
        is not None
    )


def _git(
    tree: Tree,
    *args: str,
    common: PurePosixPath | None = None,
    limit: int = 4096,
    work_tree: Path | None = None,
    timeout: float = TIMEOUT_S,
) -> str | None:
    """git's output for ``args`` in the hardened repository, or None when it fails; ``work_tree``:
    the folder a checkout writes to (its index lives in the hardened repository, which a call's own)."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        with _repository(tree, common, work_tree) as (folder, env):
            done = subprocess.run(
                [git, "--no-pager", *HARDENING, *args],
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
    except (CheckoutError, OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace")[:limit] if done.returncode == 0 else None


@contextmanager
def _repository(
    tree: Tree, common: PurePosixPath | None, work_tree: Path | None = None
) -> Iterator[tuple[Path, dict[str, str]]]:
    """A bare repository of ours over the checkout's object files (those of ``common``, the git
    directory relative to the tree, else the tree's own), and git's whole environment."""
    common = common if common is not None else refs.git_dir(tree)[1]
    with tempfile.TemporaryDirectory(prefix="run-matrix-git-") as scratch:
        folder = Path(scratch) / "git"
        (folder / "objects").mkdir(parents=True)
        (folder / "refs").mkdir()
        (folder / "HEAD").write_text("ref: refs/heads/none\n", encoding="ascii")
        (folder / "config").write_text(CONFIG, encoding="ascii")
        _link_objects(tree, common / "objects", folder / "objects")
        _copy_shallow(tree, common / "shallow", folder / "shallow")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "XDG_CONFIG_HOME": scratch,
            "GIT_DIR": str(folder),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
        if work_tree is not None:
            env.update({"GIT_WORK_TREE": str(work_tree), "GIT_INDEX_FILE": str(folder / "index")})
        yield folder, env


def _link_objects(tree: Tree, objects: object, into: Path) -> None:
    """Links to the checkout's fan-out folders and ``pack/``, each a real folder of the tree."""
    if not tree.is_dir(str(objects)):
        raise CheckoutError(f"{tree.root} has no {objects}")
    for name in [f"{n:02x}" for n in range(256)] + ["pack"]:
        relative = f"{objects}/{name}"
        if tree.is_dir(relative):
            (into / name).symlink_to(tree.locate(relative), target_is_directory=True)


def _copy_shallow(tree: Tree, shallow: object, into: Path) -> None:
    """A shallow clone's boundary (CI checks out one commit): its lines, when all are object ids."""
    try:
        lines = tree.read_bytes(str(shallow), refs.MAX_PACKED_BYTES).decode("ascii").split()
    except (CheckoutError, UnicodeDecodeError):
        return
    if lines and all(refs.OBJECT_ID.fullmatch(line) for line in lines):
        into.write_text("\n".join(lines) + "\n", encoding="ascii")
