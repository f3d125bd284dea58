"""recordings: a test's recording (what the sandbox reported of its runs) kept by what it read.

A key is the SHA-256 of everything a recording can depend on, so an edit anywhere is a new key and
nothing is invalidated by hand (a miss costs a sandbox run; a stale hit would be a wrong spec):

* what the sandbox showed the script: every file under each path it binds (``binds.script_reads``:
  the whole checkout with ``--miles-root``, else the script and the modules beside it it imports),
  by name and bytes, a link by its target (each file opened without following a link or waiting on
  a FIFO; past :data:`MAX_FILES` files or :data:`MAX_BYTES` bytes in all nothing is cached);
* run-matrix's own code and data (every file of the ``runner`` and ``schemas`` packages and of
  ``miles/``: the harness and recorder run in the sandbox, the rest reads what they wrote), the
  interpreter (its path and version) and what is installed for it (the names in every folder of
  ``sys.path``), and the run's environment, argv and limits;

The tree is looked at (each file's size, times and inode) before the recording and again after:
one that changed meanwhile keeps nothing. An entry is a JSON file written whole, signed with a key
of this cache's own (``secret``, readable by its owner only); one that cannot be read, is not a
regular file, is too large, is signed wrongly or is for another key is a miss, never trusted. A
cache folder another user could write into is not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from runner.atomic import write_text
from runner.memos import remember
from runner.spec import documents

FORMAT = "run-matrix-recording-1"
MAX_ENTRY = 64 << 20  # bytes of one entry read, at the most
MAX_FILES = 50_000  # files of the bound paths hashed, at the most; past it nothing is cached
MAX_BYTES = 2 << 30  # bytes of the bound files hashed, in all, at the most (likewise)
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # no link, no waiting on a FIFO
_OWN = Path(__file__).resolve().parents[2]  # the folder holding runner/, schemas/, miles/
_OWN_PARTS = ("runner", "schemas", "miles")
_SKIPPED = frozenset({"__pycache__"})  # what Python writes beside run-matrix's own code
# lasting state (importer/__init__.py says why): the hash of a tree's bytes by its stamp, in this
# process (a walk of 2k files costs milliseconds, hashing 25 MB not); the paths whose stamp is taken
# once (held()), and that stamp
_CONTENTS: dict[tuple[tuple[Path, ...], str], str] = {}
_HELD: dict[tuple[Path, ...], str | None] = {}
# one thread walks and hashes a tree at a time; the others then find it kept (the batches of a round
# recorded together are keyed at once: each used to hash the whole checkout, 0.6 s, for itself)
_HASHING = threading.Lock()


class Unhashable(Exception):
    """What the sandbox shows cannot be hashed within bounds (nothing is cached)."""


def key(parts: dict[str, Any], reads: Iterable[Path]) -> tuple[str, str]:
    """The entry's key, and the stamp of the bound files (to compare after the recording)."""
    paths = sorted({Path(p) for p in reads})
    with _HASHING:
        stamp = _stamp(paths)
        contents = _CONTENTS.get((tuple(paths), stamp)) or _tree(paths)[1]
        _CONTENTS[(tuple(paths), stamp)] = contents
        code = own_code()
    data = {"format": FORMAT, "code": code, "python": [sys.executable, sys.version], **parts}
    data["installed"] = installed()
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode())
    digest.update(contents.encode())
    return digest.hexdigest(), stamp


def stamp(reads: Iterable[Path], now: bool = False) -> str:
    """The bound files' sizes, times and inodes: cheap, to tell that none changed meanwhile (``now``:
    looked at now, even where the stamp is held)."""
    paths = sorted({Path(p) for p in reads})
    return _stamp_now(paths) if now else _stamp(paths)


def entries(folder: Path) -> set[str]:
    """The names of the recordings kept in ``folder``."""
    try:
        return {name for name in os.listdir(folder) if name.endswith(".json")}
    except OSError:
        return set()


def forget(folder: Path, keep: set[str]) -> None:
    """Remove every recording of ``folder`` but those named in ``keep``."""
    for name in entries(folder) - keep:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)


def load(folder: Path, entry_key: str) -> dict[str, Any] | None:
    """The recording kept under ``entry_key``; None for a miss (absent, damaged, forged, foreign)."""
    secret = _secret(folder, create=False)
    if secret is None:
        return None
    try:
        fd = os.open(folder / f"{entry_key}.json", _READ)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY:
            return None
        raw = file.read(MAX_ENTRY + 1)
    try:
        entry = documents.json_data(raw, MAX_ENTRY)
        payload, signature = entry["payload"], entry["signature"]
        expected = _sign(secret, entry_key, payload)
        if not (isinstance(signature, str) and hmac.compare_digest(signature, expected)):
            return None
        found = documents.json_data(payload, MAX_ENTRY)
    except (ValueError, KeyError, TypeError):
        return None
    return found if isinstance(found, dict) and found.get("key") == entry_key else None


def store(folder: Path, entry_key: str, recording: dict[str, Any]) -> None:
    """Keep ``recording`` under ``entry_key`` (a cache that cannot be written only costs time)."""
    secret = _secret(folder, create=True)
    if secret is None:
        return
    # in the recording's own order: what a script read first is noted first, kept or made afresh
    payload = json.dumps({**recording, "key": entry_key})
    entry = json.dumps({"payload": payload, "signature": _sign(secret, entry_key, payload)})
    with contextlib.suppress(OSError):
        write_text(folder / f"{entry_key}.json", entry)


def _sign(secret: bytes, entry_key: str, payload: str) -> str:
    return hmac.new(secret, f"{FORMAT}\0{entry_key}\0{payload}".encode(), hashlib.sha256).hexdigest()


def _secret(folder: Path, create: bool) -> bytes | None:
    """This cache's signing key; None when the folder is not this user's alone (or cannot be made)."""
    try:
        if create:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        path = folder / "secret"
        if create and not os.path.lexists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(os.urandom(32))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as file:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
                return None
            secret = file.read(64)
    except OSError:
        return None
    return secret if len(secret) == 32 else None


@remember("shipped", "the hash of run-matrix's own files, as its code is loaded: unchanged while it runs")
def own_code() -> str:
    """The hash of run-matrix's own files that recording and reading a recording depend on."""
    return _tree([_OWN / part for part in _OWN_PARTS if (_OWN / part).is_dir()], _SKIPPED)[1]


def installed() -> str:
    """The names in every folder of the interpreter's installation that imports search (an install,
    an upgrade: a package's dist-info is named with its version), as the sandbox's interpreter sees
    the same installation. Not the folder this process was started from, which Python puts first on
    its path (the CLI's ``bin/``, a worker's working folder) and the sandbox's, run isolated, never
    searches: every process of one import keys a recording alike."""
    digest = hashlib.sha256()
    prefixes = {Path(sys.prefix), Path(sys.base_prefix)}
    path = sys.path if sys.flags.safe_path else sys.path[1:]  # past the folder Python put first
    searched = {entry for entry in path if entry and any(Path(entry).is_relative_to(p) for p in prefixes)}
    for folder in sorted(entry for entry in searched if os.path.isdir(entry)):
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            names = [f"error {exc.errno}"]
        digest.update("\0".join([folder, *names]).encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def _files(paths: list[Path], skipped: frozenset[str] = frozenset()) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``paths`` (no link followed), sorted, with what ``lstat`` says of it."""
    count = 0
    for root in paths:
        for folder, names, files in os.walk(root, followlinks=False):
            names[:] = sorted(n for n in names if n not in skipped)
            for name in sorted([*files, *(n for n in names if os.path.islink(os.path.join(folder, n)))]):
                count += 1
                if count > MAX_FILES:
                    raise Unhashable(f"more than {MAX_FILES} files under {', '.join(map(str, paths))}")
                path = os.path.join(folder, name)
                yield path, os.lstat(path)
        if not os.path.isdir(root):
            yield str(root), os.lstat(root)


@contextlib.contextmanager
def held(paths: Iterable[Path]) -> Iterator[None]:
    """Within it, this process takes the stamp of ``paths`` once and keeps it: a suite import stamps
    its checkout thousands of times (every recording looked up, before and after each one made). It
    looks at the checkout again at its end, and keeps nothing it recorded if it changed (``suite.py``)."""
    key = tuple(sorted(Path(p) for p in paths))
    if not key or key in _HELD:
        yield
        return
    _HELD[key] = None
    try:
        yield
    finally:
        del _HELD[key]


def _stamp(paths: list[Path]) -> str:
    held = tuple(paths)
    if held not in _HELD:
        return _stamp_now(paths)
    found = _HELD[held]
    if found is None:
        found = _HELD[held] = _stamp_now(paths)
    return found


def _stamp_now(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path, info in _files(paths):
        digest.update(
            f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n".encode()
        )
    return digest.hexdigest()


def _tree(paths: list[Path], skipped: frozenset[str] = frozenset()) -> tuple[str, str]:
    """The stamp of ``paths`` and the hash of their names and bytes (a link: its target)."""
    stamp_digest, digest = hashlib.sha256(), hashlib.sha256()
    left = MAX_BYTES
    for path, info in _files(paths, skipped):
        line = f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n"
        stamp_digest.update(line.encode())
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link\0" + os.readlink(path).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(info.st_mode):
            left -= info.st_size
            if left < 0:
                raise Unhashable(f"more than {MAX_BYTES} bytes under {', '.join(map(str, paths))}")
            digest.update(_file_hash(path, info.st_size).encode())
        else:
            digest.update(f"kind {stat.S_IFMT(info.st_mode)}".encode())
        digest.update(b"\n")
    return stamp_digest.hexdigest(), digest.hexdigest()


def _file_hash(path: str, size: int) -> str:
    """The hash of the file's first ``size`` bytes (what ``lstat`` said it held: one that grew or was
    swapped since changes the stamp, so its recording is not kept), opened as :data:`_READ` says."""
    try:
        descriptor = os.open(path, _READ)
    except OSError as exc:
        return f"error {exc.errno}"
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return "not a regular file"
        digest = hashlib.sha256()
        while size > 0 and (chunk := file.read(min(size, 1 << 20))):
            digest.update(chunk)
            size -= len(chunk)
        return digest.hexdigest()
