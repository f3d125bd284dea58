"""tree: the files of a miles checkout, read as a stranger's files.

Every path is relative to the checkout's root and is resolved (links followed) before use; one that
ends outside the root is refused (:class:`OutsideCheckout`), whatever the link or ``..`` that led
there. A read opens the resolved path with ``O_NOFOLLOW`` (a link swapped in after the check is not
followed) and ``O_NONBLOCK`` (a FIFO does not hang), takes a regular file only, and reads at most
its limit (:class:`TooLarge` past it). A listing stops at its limit of entries and enters no linked
folder.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from runner.errors import EnvironmentProblem

MAX_BYTES = 4 * 1024 * 1024  # a source file of miles is kilobytes; a bigger one is not read
MAX_FILES = 20_000  # entries of one listing (miles main holds about 1,500 files in all)
MAX_DEPTH = 16  # folders below the one listed


class CheckoutError(EnvironmentProblem):
    """A file of the checkout cannot be read as asked: the message says which and why."""


class OutsideCheckout(CheckoutError):
    """A path that leads out of the checkout (``..``, an absolute path, a link)."""


class TooLarge(CheckoutError):
    """A file over the read's limit, or a listing over its count."""


@dataclass(frozen=True)
class Tree:
    """A checkout's root (resolved) and the only ways run-matrix reads below it."""

    root: Path

    @classmethod
    def at(cls, root: Path) -> Tree:
        resolved = root.resolve()
        if not resolved.is_dir():
            raise CheckoutError(f"the miles checkout {root} is not a directory")
        return cls(resolved)

    def locate(self, relative: str | PurePosixPath) -> Path:
        """The resolved path of ``relative``, which stays in the tree; else OutsideCheckout."""
        text = str(relative)
        if text.startswith("/") or "\0" in text:
            raise OutsideCheckout(f"{text!r} is not a path relative to the checkout at {self.root}")
        try:
            resolved = (self.root / text).resolve()
        except (OSError, RuntimeError):  # a loop of links
            raise OutsideCheckout(f"{text} in the checkout at {self.root} is a loop of links") from None
        if not resolved.is_relative_to(self.root):
            raise OutsideCheckout(f"{text} leads out of the checkout at {self.root}")
        return resolved

    def exists(self, relative: str | PurePosixPath) -> bool:
        """Whether ``relative`` is in the tree (a path leading out of it is not)."""
        with contextlib.suppress(OutsideCheckout):
            return self.locate(relative).exists()
        return False

    def is_file(self, relative: str | PurePosixPath) -> bool:
        with contextlib.suppress(OutsideCheckout):
            return self.locate(relative).is_file()
        return False

    def is_dir(self, relative: str | PurePosixPath) -> bool:
        with contextlib.suppress(OutsideCheckout):
            return self.locate(relative).is_dir()
        return False

    def stamp(self, relative: str | PurePosixPath) -> int:
        """The file's modification time in ns (-1 when it is missing): a cache key, never content."""
        try:
            return self.locate(relative).stat().st_mtime_ns
        except (OSError, OutsideCheckout):
            return -1

    def read_bytes(self, relative: str | PurePosixPath, limit: int = MAX_BYTES) -> bytes:
        """At most ``limit`` bytes of a regular file of the tree; CheckoutError saying why not."""
        path = self.locate(relative)
        try:
            descriptor = os.open(
                path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            )
        except OSError as exc:
            raise CheckoutError(
                f"{relative} in the checkout at {self.root} cannot be read: {exc.strerror}"
            ) from None
        with contextlib.closing(os.fdopen(descriptor, "rb")) as file:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise CheckoutError(f"{relative} in the checkout at {self.root} is not a regular file")
            data = file.read(limit + 1)
        if len(data) > limit:
            raise TooLarge(
                f"{relative} in the checkout at {self.root} holds more than {limit} bytes: not read"
            )
        return data

    def read_text(self, relative: str | PurePosixPath, limit: int = MAX_BYTES) -> str:
        """The file as UTF-8 text (undecodable bytes replaced), bounded as :meth:`read_bytes`."""
        return self.read_bytes(relative, limit).decode("utf-8", "replace")

    def files(
        self,
        folder: str | PurePosixPath,
        pattern: str = "*",
        *,
        recursive: bool = False,
        limit: int = MAX_FILES,
    ) -> tuple[PurePosixPath, ...]:
        """The files below ``folder`` whose name matches ``pattern``, relative to the root, sorted; a
        link is listed only when it leads to a file of the tree, and no linked folder is entered.
        TooLarge past ``limit`` entries."""
        found: list[PurePosixPath] = []
        if not self.is_dir(folder):
            return ()
        start = self.locate(folder)
        for path in _walk(start, recursive, limit):
            relative = PurePosixPath(path.relative_to(self.root).as_posix())
            if fnmatch.fnmatchcase(path.name, pattern) and (not path.is_symlink() or self.is_file(relative)):
                found.append(relative)  # a link counts when it leads to a file of the tree
        return tuple(sorted(found))

    def left_out(
        self, folder: str | PurePosixPath, pattern: str = "*", *, limit: int = MAX_FILES
    ) -> tuple[tuple[PurePosixPath, str], ...]:
        """What directly in ``folder`` matches ``pattern`` but :meth:`files` does not list, each with
        why: a link that leads out of the tree or to no file of it, a FIFO, a socket, a device (a
        folder is no file, and not named). A caller says so, rather than skip it without a word."""
        if not self.is_dir(folder):
            return ()
        listed = set(self.files(folder, pattern, limit=limit))  # TooLarge past ``limit`` entries
        found: list[tuple[PurePosixPath, str]] = []
        try:
            with os.scandir(self.locate(folder)) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            return ()
        for entry in entries[:limit]:
            relative = PurePosixPath(Path(entry.path).relative_to(self.root).as_posix())
            why = _not_listed(entry)
            if relative not in listed and fnmatch.fnmatchcase(entry.name, pattern) and why:
                found.append((relative, why))
        return tuple(found)

    def walk(
        self, folder: str | PurePosixPath = ".", *, limit: int = MAX_FILES
    ) -> Iterator[tuple[PurePosixPath, list[str], list[str]]]:
        """As ``os.walk`` below ``folder``, top-down and sorted, following no link: each folder
        (relative to the root), the names of what it holds besides folders (a link among them,
        wherever it leads: a caller refuses it by name) and of its folders, which a caller may prune
        in place. TooLarge past ``limit`` entries in all; no deeper than MAX_DEPTH."""
        seen = 0
        waiting = [(self.locate(folder), 0)]
        while waiting:
            current, depth = waiting.pop()
            try:
                with os.scandir(current) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                continue
            seen += len(entries)
            if seen > limit:
                raise TooLarge(f"{self.root / folder} holds more than {limit} entries: not listed")
            folders = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
            others = [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
            yield PurePosixPath(current.relative_to(self.root).as_posix()), others, folders
            if depth < MAX_DEPTH:
                waiting += [(current / name, depth + 1) for name in reversed(folders)]

    def digest(self, relatives: Iterable[str | PurePosixPath], limit: int = MAX_BYTES) -> str:
        """One hash over the names and contents of ``relatives`` (a missing file counts as missing):
        a cache key that changes with any of them."""
        digest = hashlib.sha256()
        for relative in relatives:
            digest.update(f"{relative}\0".encode())
            try:
                digest.update(hashlib.sha256(self.read_bytes(relative, limit)).digest())
            except CheckoutError:
                digest.update(b"\0missing\0")
        return digest.hexdigest()


def _walk(start: Path, recursive: bool, limit: int) -> Iterable[Path]:
    """Regular files and links below ``start`` (no link followed), at most ``limit`` entries looked at."""
    seen = 0
    folders = [(start, 0)]
    while folders:
        folder, depth = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                raise TooLarge(f"{start} holds more than {limit} entries: not listed")
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                yield Path(entry.path)
            elif recursive and depth < MAX_DEPTH and entry.is_dir(follow_symlinks=False):
                folders.append((Path(entry.path), depth + 1))


def _not_listed(entry: os.DirEntry[str]) -> str:
    """Why an entry is no file to read ("" for a folder, or a file that is one)."""
    if entry.is_symlink():
        return "a link that leads out of the checkout or to no file in it"
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return "an entry that cannot be examined"
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return ""
    if stat.S_ISFIFO(mode):
        return "a FIFO, not a regular file"
    return "a socket" if stat.S_ISSOCK(mode) else "a device, not a regular file"
