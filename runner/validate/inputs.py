"""inputs: what a computation read from the machine, recorded while it runs, checked again later.

``validate`` replays a verdict (``runner.validate.replay``) only while everything the run that reached it
read is as it was. A ``Recorder`` notes, for the span of one run:

* every file opened for reading (its bytes' SHA-256, taken when the run ends; a run that read a
  FIFO or a device, whose bytes cannot be read again, is not recordable);
* every folder listed (``os.listdir``, ``os.scandir``: globs and walks) — the names in it;
* every path looked at (``os.stat``, ``os.lstat``: ``exists()``, ``is_file()``, ``resolve()``) —
  what it is, and for a file its size and modification time; a path that was missing must stay
  missing (a new ``./nv/x.yaml`` would change what ``nv/x.yaml`` means);
* every module of code that ran (its file's size and modification time, as Python's own
  bytecode check does), and the names in every folder of ``sys.path`` (an install or uninstall).

Opens and listings come from the interpreter's audit hooks (PEP 578); no audit event reports a
stat, so ``os.stat`` and ``os.lstat`` are wrapped while recording and restored after. A run that
starts a process or opens a socket read what no record can cover: it is not recordable, and
neither is one whose inputs changed while it ran.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

Record = tuple[str, str, str]  # (kind: file | folder | path | code, absolute path, signature)

# Events after which what the run read cannot be known: another process, the network.
_OPAQUE = (
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "socket.connect",
)
_WRITE_MODES = frozenset("wax+")


class Recorder:
    """What one run read; ``records()`` when it is over (None: not recordable)."""

    def __init__(self) -> None:
        self.opened: set[str] = set()
        self.listed: set[str] = set()
        self.probed: dict[str, str] = {}  # path -> its signature when first looked at
        self.opaque = ""  # why the run cannot be recorded, when it cannot

    def event(self, name: str, args: tuple[Any, ...]) -> None:
        if name == "open":
            path, mode, flags = args
            if _reads(mode, flags) and not isinstance(path, int):
                found = _absolute(path)
                if not found.endswith(".pyc"):  # an import: the module's own file is checked as code
                    self.opened.add(found)
                    self.probed.setdefault(found, _probe_now(found))  # to see it change while the run reads
        elif name in ("os.listdir", "os.scandir"):
            where = args[0]
            if isinstance(where, int):
                self.opaque = f"{name} of a file descriptor"
            else:
                self.listed.add(_absolute("." if where is None else where))
        elif name in _OPAQUE:
            self.opaque = name

    def probe(self, path: Any, follow: bool, result: os.stat_result | OSError) -> None:
        if isinstance(path, int):
            return  # fstat of a file already opened (and so recorded)
        key = _probe_key(_absolute(path), follow)
        self.probed.setdefault(key, _stat_signature(key, result))

    def records(self) -> list[Record] | None:
        """The inputs as records, or None when the run cannot be replayed from them."""
        if self.opaque:
            return None
        probes = [("path", key, signature) for key, signature in sorted(self.probed.items())]
        if not unchanged(probes):  # a file changed while the run read it: its verdict is of neither
            return None
        files = [("file", path, _digest(path)) for path in sorted(self.opened)]
        if any(digest is None for _, _, digest in files):  # a FIFO, a device: its bytes are gone
            return None
        return [
            *probes,
            *(("folder", path, _listing(path)) for path in sorted(self.listed)),
            *((kind, path, digest) for kind, path, digest in files if digest is not None),
            *_code(),
        ]


def unchanged(records: list[Record]) -> bool:
    """Whether every record still holds (cheap kinds first; stops at the first that does not). A
    file's record holds only for a regular file (``_digest`` gives None, never equal, for others)."""
    checks: dict[str, Callable[[str], str | None]] = {
        "code": _file_stamp,
        "path": _probe_now,
        "folder": _listing,
        "file": _digest,
    }
    if any(kind not in checks for kind, _, _ in records):
        return False
    try:
        for kind, check in checks.items():
            if any(check(path) != signature for each, path, signature in records if each == kind):
                return False
    except ValueError:  # a path no system call takes (a NUL in it): not a record this code wrote
        return False
    return True


# An audit hook cannot be removed: the one hook asks this list who listens (no one, mostly).
_RECORDING: list[Recorder] = []


def _hook(name: str, args: tuple[Any, ...]) -> None:
    if _RECORDING and (name in ("open", "os.listdir", "os.scandir") or name in _OPAQUE):
        recorder = _RECORDING[-1]
        try:
            recorder.event(name, args)
        except Exception:  # an audit hook that raises would fail the open itself
            recorder.opaque = f"{name} could not be recorded"


sys.addaudithook(_hook)


@contextmanager
def recording() -> Iterator[Recorder]:
    """Record what the body reads (audit events, and ``os.stat``/``os.lstat`` wrapped for its span)."""
    recorder = Recorder()
    stat_before, lstat_before = os.stat, os.lstat
    os.stat = _probing(stat_before, recorder, follow=True)
    os.lstat = _probing(lstat_before, recorder, follow=False)
    _RECORDING.append(recorder)
    try:
        yield recorder
    finally:
        _RECORDING.remove(recorder)
        os.stat, os.lstat = stat_before, lstat_before


def _probing(original: Callable[..., os.stat_result], recorder: Recorder, follow: bool) -> Callable[..., Any]:
    def probe(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if args or kwargs.get("dir_fd") is not None:
            recorder.opaque = "a stat relative to a folder descriptor"
        follows = follow and kwargs.get("follow_symlinks", True)
        try:
            result = original(path, *args, **kwargs)
        except OSError as exc:
            recorder.probe(path, follows, exc)
            raise
        recorder.probe(path, follows, result)
        return result

    return probe


def _reads(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return not _WRITE_MODES & set(mode)
    return isinstance(flags, int) and flags & os.O_ACCMODE == os.O_RDONLY and not flags & os.O_CREAT


def _absolute(path: Any) -> str:
    name = os.fsdecode(os.fspath(path))
    return os.path.abspath(name)


def _probe_key(path: str, follow: bool) -> str:
    return path if follow else f"{path}\0lstat"  # \0 never appears in a path


def _probe_now(key: str) -> str:
    path, _, how = key.partition("\0")
    try:
        result: os.stat_result | OSError = os.lstat(path) if how else os.stat(path)
    except OSError as exc:
        result = exc
    return _stat_signature(key, result)


def _stat_signature(key: str, result: os.stat_result | OSError) -> str:
    if isinstance(result, OSError):
        return f"error {result.errno}"
    mode = result.st_mode
    if stat.S_ISREG(mode):
        return f"file {result.st_size} {result.st_mtime_ns}"
    if stat.S_ISDIR(mode):
        return "folder"  # what is in it is a listing's record, when it was listed
    if stat.S_ISLNK(mode):
        try:
            return f"link {os.readlink(key.partition(chr(0))[0])}"
        except OSError as exc:
            return f"link error {exc.errno}"
    return f"other {stat.S_IFMT(mode)}"


def _listing(path: str) -> str:
    """The names in a folder, a folder's with a trailing / (a glob descends into those)."""
    try:
        with os.scandir(path) as entries:
            names = sorted(e.name + "/" if e.is_dir() else e.name for e in entries)
    except OSError as exc:
        return f"error {exc.errno}"
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()


def _digest(path: str) -> str | None:
    """The SHA-256 of a regular file's bytes; None for anything else (a FIFO, a device such as
    /dev/zero, a folder), whose bytes no record can hold: reading one may never end. The kind is
    looked at before the open (opening a device may do something) and again on the descriptor
    (O_NONBLOCK: a FIFO swapped in meanwhile cannot block the open); no more bytes are read than
    the size it had then (a file that changes meanwhile is not the one looked at: None too)."""
    try:
        looked_at = os.stat(path)
        if not stat.S_ISREG(looked_at.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"error {exc.errno}"
    try:
        with os.fdopen(fd, "rb") as stream:
            opened = os.fstat(fd)
            if _identity(opened) != _identity(looked_at) or not stat.S_ISREG(opened.st_mode):
                return None
            return _hash_at_most(stream, looked_at.st_size)
    except OSError as exc:
        return f"error {exc.errno}"


def _identity(found: os.stat_result) -> tuple[int, int, int]:
    return found.st_dev, found.st_ino, found.st_size


def _hash_at_most(stream: BinaryIO, size: int) -> str | None:
    """The hash of a stream's ``size`` bytes; None when it holds fewer or more (it changed)."""
    digest = hashlib.sha256()
    left = size
    while left > 0 and (chunk := stream.read(min(left, 1 << 20))):
        digest.update(chunk)
        left -= len(chunk)
    if left or stream.read(1):
        return None
    return digest.hexdigest()


def _file_stamp(path: str) -> str:
    try:
        return _stat_signature(path, os.stat(path))
    except OSError as exc:
        return f"error {exc.errno}"


def _code() -> Iterator[Record]:
    """Every module's file (an edit, an upgrade), and the names in every folder imports search (an
    install: a new pydantic plugin is only an entry point there, read when the first model is built)."""
    named = (getattr(module, "__file__", None) for module in list(sys.modules.values()))
    files = {_absolute(name) for name in named if isinstance(name, str)}
    for path in sorted(files):
        yield "code", path, _file_stamp(path)
    for folder in sorted({_absolute(entry) for entry in sys.path if entry and os.path.isdir(entry)}):
        yield "folder", folder, _listing(folder)
