"""The one writer of files: whole or not at all, and never through a link.

A file is written as a temp file created in the same folder (``O_EXCL``: never an existing
name, never a link), then renamed over the target: a reader (CI collecting a JUnit file, a
later run reading a record) sees the old content or the new, never half of one; a write that
fails (disk full, a file size limit) leaves the old. A rename replaces a link, never what it
points to; still, a link (or a folder, a FIFO) where run-matrix is to write is refused (exit 3)
— unless the user named that path and passed ``--force`` (``replace_link``): then the link is
replaced. A log is opened with ``O_NOFOLLOW`` and checked to be a plain file of one name.
Several files (a spec and its components) are written all together or not at all.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from runner.errors import EnvironmentProblem, UsageError, display_path

FORCE_HINT = "pass --force to replace the link itself (never what it points to)"
EDITED_HINT = "--force overwrites (your edits are lost), -o writes elsewhere"
GENERATED_HINT = "pass --force to replace"  # what import and `presets sync` write


def refuse_existing(paths: Iterable[Path], force: bool, hint: str = EDITED_HINT) -> None:
    """UsageError when one of ``paths`` exists and not ``force``: what run-matrix writes (an overlay,
    an imported spec) is edited by hand afterwards, and that work is never lost silently."""
    existing = [display_path(p) for p in paths if p.exists()]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; {hint}")


def refuse_link(path: Path, replace_link: bool = False, hint: str = "") -> None:
    """EnvironmentProblem when ``path`` is a link (unless ``replace_link``) or is there but is no
    plain file: run-matrix writes files, never through a link, never over a folder or a FIFO."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {display_path(path)}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(found.st_mode):
        if replace_link:
            return
        where = os.readlink(path)
        more = f"; {hint}" if hint else ""
        shown = Path(display_path(path.parent)) / path.name  # the link's name, not its target's
        raise EnvironmentProblem(
            f"{shown} is a link (to {where}): run-matrix never writes through a link{more}"
        )
    if not stat.S_ISREG(found.st_mode):
        raise EnvironmentProblem(f"{display_path(path)} is there and is not a plain file: not replaced")


def write_text(path: Path, text: str, mode: int | None = None, replace_link: bool = False) -> None:
    """Replace ``path`` with ``text`` (``mode``: its permissions, else the old file's or the umask's);
    raises OSError (the target untouched) when it cannot, EnvironmentProblem for a link there."""
    write_bytes(path, text.encode("utf-8"), mode, replace_link)


def write_bytes(path: Path, data: bytes, mode: int | None = None, replace_link: bool = False) -> None:
    """``write_text`` of bytes."""
    refuse_link(path, replace_link)
    mode = _mode(path) if mode is None else mode
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _mode(path: Path) -> int:
    """The target's permissions when it is a plain file, else what a plain open() would give it."""
    with contextlib.suppress(OSError):
        found = os.lstat(path)
        if stat.S_ISREG(found.st_mode):
            return found.st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def open_log(path: Path, append: bool = False) -> BinaryIO:
    """A log file run-matrix writes in a folder: created or reused, never through a link, never a
    file that has another name too (a hard link planted there): EnvironmentProblem for those, OSError
    when it cannot be opened."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o600)
    except OSError:
        if os.path.islink(path):
            refuse_link(path)
        raise
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
        os.close(fd)
        what = "has another name too (a hard link)" if stat.S_ISREG(found.st_mode) else "is not a plain file"
        raise EnvironmentProblem(f"the log {display_path(path)} {what}: run-matrix does not write it")
    os.set_blocking(fd, True)
    if not append:
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "ab" if append else "wb")


def write_new(files: Mapping[Path, str], force: bool) -> None:
    """``write_all`` for what the user edits afterwards (a ported or upgraded overlay): an existing
    file is refused without ``force``, and with it a link is replaced, never its target."""
    refuse_existing(files, force)
    write_all(files, replace_link=force)


def write_generated(files: Mapping[Path, str], force: bool, named: Collection[Path] = ()) -> None:
    """``write_all`` for what a command generates (import, ``presets sync``): an existing file is only
    replaced with ``force``; a link where one goes is refused (exit 3), and ``force`` replaces one only
    at a path the user ``named`` (``-o spec.yaml``), never in a folder run-matrix fills (components)."""
    refuse_existing(files, force, GENERATED_HINT)
    for path in files:
        if path not in named:
            refuse_link(path)
    write_all(files, replace_link=force)


def write_all(files: Mapping[Path, str], replace_link: bool = False, mode: int | None = None) -> None:
    """Write every file, or none: if one fails, the files already replaced get their old text back
    and new ones (and the folders made for them) are removed; an OSError is an EnvironmentProblem."""
    for path in files:
        refuse_link(path, replace_link, FORCE_HINT)
    old = {path: _old(path) for path in files if os.path.lexists(path)}
    made: list[Path] = []
    done: list[Path] = []
    path = next(iter(files), Path())
    try:
        for path, text in files.items():
            for folder in reversed(path.parents):
                if not folder.exists() and _made(folder):
                    made.append(folder)
            write_text(path, text, mode, replace_link)
            done.append(path)
    except BaseException as exc:
        _undo(done, old, made)
        if isinstance(exc, OSError):  # a folder that cannot be made, a read-only file system, ...
            raise EnvironmentProblem(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from None
        raise


def _made(folder: Path) -> bool:
    """Make ``folder``; False when another writer made it meanwhile (an import writes its cases side
    by side), which is then not this one's to remove. Anything else in its place still fails."""
    try:
        folder.mkdir()
    except FileExistsError:
        if folder.is_dir() and not folder.is_symlink():
            return False
        raise
    return True


def _old(path: Path) -> tuple[str, str]:
    """What is at ``path`` now: ("link", where it points) or ("text", its text)."""
    if os.path.islink(path):
        return "link", os.readlink(path)
    return "text", path.read_text(encoding="utf-8")


def _undo(done: list[Path], old: Mapping[Path, tuple[str, str]], made: list[Path]) -> None:
    for written in done:
        with contextlib.suppress(OSError):
            if written not in old:
                written.unlink(missing_ok=True)
            elif old[written][0] == "link":
                written.unlink()
                os.symlink(old[written][1], written)
            else:
                write_text(written, old[written][1])
    for folder in reversed(made):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
