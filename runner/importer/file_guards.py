"""The import sandbox's guards of files (installed by ``guards.py``): writing, moving or deleting a
file is recorded and not done (a whole file the test's own code writes goes to a private copy,
``Trace.capture``, any other write to ``/dev/null``); a file of a recorded download reads as the
content import knows of it (``miles/import.yaml``), else is refused by name, and the download's folder
is there; listing a download's folder, a folder it lies in or a link to it is refused (which files a
Hub repo holds is not known here), and the function of the test's own that lists it is noted for
capture.py, which records it as a prepare call; and a path made of what such a call returns
(``returned.Prepared``) is refused whatever is done with it. Loaded by path by ``harness.py``;
standard library only.
"""

from __future__ import annotations

import _io
import builtins
import glob
import io
import os
import pathlib
import posix
import shutil
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

Guarded = tuple[tuple[ModuleType, tuple[str, ...]], ...]
WRITE_MODES = set("wax+")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# os's functions are posix's: each is guarded under both names (``importlib.reload(os)`` copies
# posix's again, so posix's must be the guarded ones too)
FILE_CHANGE_NAMES = (
    *("remove", "unlink", "rmdir", "mkdir", "makedirs", "rename", "renames", "replace", "symlink", "link"),
    *("chmod", "lchmod", "fchmod", "chown", "lchown", "fchown", "truncate", "ftruncate", "utime"),
    *("mkfifo", "mknod", "setxattr", "removexattr", "chflags", "lchflags"),
)
FILE_CHANGES: Guarded = (
    (os, FILE_CHANGE_NAMES),
    (posix, FILE_CHANGE_NAMES),
    (shutil, ("rmtree", "move", "copytree", "copy", "copy2", "copyfile")),
)
_REAL_STAT = os.stat  # before the guards
CONFIG = "config.json"  # a model repo's, which a test's preflight may read
MAX_UNKNOWN = 8  # config.json look-ups whose content is unknown, kept to explain a failure


def install(trace: Any, skip: Callable[[str], Callable[..., None]]) -> None:
    """Record (``skip``), and do not do, what changes files; stand in for downloads' files; refuse
    listing a download and any use of a prepare call's result as a path."""
    _record_file_changes(trace, skip)
    _refuse_listing_downloads(trace)


def _refuse_listing_downloads(trace: Any) -> None:
    """Listing a download's folder, or a folder it lies in (``os.walk("/root/datasets")``, a glob with a
    pattern in the download's name), asks which files the Hub repo holds, which import does not know
    (it knows the content of the files ``miles/import.yaml`` names, not the repo's file list)."""

    def listing(real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            _refuse_listing(trace, path)
            return real(path, *args, **kwargs)

        return guarded

    def path_glob(real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
            _refuse_listing(trace, self)
            return real(self, *args, **kwargs)

        return guarded

    def glob_(real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(pattern: Any, *args: Any, **kwargs: Any) -> Any:
            parts = os.fsdecode(os.fspath(pattern)).split(os.sep)
            literal = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
            _refuse_listing(trace, os.sep.join(parts[:literal]) or ".")
            return real(pattern, *args, **kwargs)

        return guarded

    os.listdir = listing(os.listdir)  # not posix's: the import system's own stay as they are
    os.scandir = listing(os.scandir)
    os.fwalk = listing(os.fwalk)  # it opens the folder and lists what it opened
    pathlib.Path.glob = path_glob(pathlib.Path.glob)  # type: ignore[method-assign]
    pathlib.Path.rglob = path_glob(pathlib.Path.rglob)  # type: ignore[method-assign]
    glob.glob, glob.iglob = glob_(glob.glob), glob_(glob.iglob)


def _refuse_listing(trace: Any, folder: Any) -> None:
    """Refuse listing ``folder``, a download's or one a download lies in (the function of the test's
    that lists it is noted, two frames out: the caller of the guarded function)."""
    refuse_prepared(trace, folder, "lists")
    if not isinstance(folder, (str, bytes, os.PathLike)):
        return  # a folder's descriptor, or None for the working folder
    shown, found = os.fsdecode(os.fspath(folder)), trace.downloaded(folder)
    inside = None if found else trace.download_in(folder)
    if inside is not None:
        shown, found = f"{shown}, which holds {inside[0]}", (inside[1], "")
    if found is None or _there(inside[0] if inside else folder):
        return  # not a download's, or a real folder there (--trust-checkout on a prepared node)
    first = trace.refusal is None
    refusal = trace.refuse(
        f"lists {shown}, which `hf download {found[0]}` would have written: import does not know"
        " which files the repo holds"
    )
    if first:  # capture.py records the function of the test's that lists it as a prepare call
        trace.refusal.update(lists=trace.within(sys._getframe(2)), listed=[shown, found[0]])
    raise refusal


def refuse_prepared(trace: Any, path: Any, does: str) -> None:
    """A path made of what a function recorded as a prepare call returns (``returned.Prepared``) is
    none here: the call did not run, so reading, listing or testing it would decide silently."""
    try:
        text = path if isinstance(path, str) else os.fsdecode(os.fspath(path))
    except TypeError:
        return
    held = trace.prepared_in(text)
    if held:
        function = held[0][1]
        raise trace.refuse(
            f"{does} {text}, made of what {function}() returns: recorded as a prepare step of kind call, it"
            f" did not run here, and a spec hands what it returns only to a launch's flags"
            f" ($${{prepared:{function}}}), which nothing before the launch reads"
        )


def _record_file_changes(trace: Any, skip: Callable[[str], Callable[..., None]]) -> None:
    """Writes go to /dev/null and moves, deletions and attribute changes are not done: all recorded."""
    for module, names in FILE_CHANGES:
        for name in names:
            setattr(module, name, skip(f"{module.__name__}.{name}"))
    recorded_open = _recorded_open(trace, io.open)
    builtins.open = recorded_open
    io.open = _io.open = recorded_open
    io.FileIO = _io.FileIO = _recorded_file_io(trace, _io.FileIO)  # type: ignore[misc]
    os.open = posix.open = _recorded_os_open(trace, os.open)
    # not posix's: the import system's own stay as they are
    os.stat, os.lstat = _stat_downloads(trace, os.stat), _stat_downloads(trace, os.lstat)
    os.access = _looked_up(trace, os.access)
    os.symlink = posix.symlink = _linked(trace, os.symlink)
    accessor = getattr(pathlib, "_NormalAccessor", None)
    if accessor is not None:  # Python 3.10's pathlib bound io.open and os.* when it was imported
        accessor.open = staticmethod(recorded_open)
        for name in ("mkdir", "unlink", "rmdir", "rename", "replace", "symlink", "link", "chmod"):
            if hasattr(accessor, name):
                setattr(accessor, name, staticmethod(skip(f"os.{name}")))


def _recorded_open(trace: Any, real_open: Callable[..., Any]) -> Callable[..., Any]:
    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        # with an opener (tempfile's), the opener names the file and its os.open is guarded
        opener = kwargs.get("opener", args[5] if len(args) > 5 else None)
        if WRITE_MODES & set(mode) and not isinstance(file, int) and opener is None:
            return real_open(
                _written(trace, file, "w" in mode or "x" in mode), mode.replace("x", "w"), *args, **kwargs
            )
        refuse_prepared(trace, file, "reads")
        if not isinstance(file, int) and trace.downloaded(file):
            return _downloaded_file(trace, file, mode, real_open)
        stand_in = None if isinstance(file, int) else trace.launch_output(file)
        if stand_in is not None:  # a file an earlier launch writes (capture.py checks where it goes)
            return io.BytesIO(stand_in.encode()) if "b" in mode else io.StringIO(stand_in)
        return real_open(file, mode, *args, **kwargs)

    return open_


def _downloaded_file(trace: Any, file: Any, mode: str, real_open: Callable[..., Any]) -> Any:
    """A file of a recorded download: the content import knows of it, else a refusal that names it."""
    text = trace.stand_in(file)
    if text is None and _there(file):  # a real file there (--trust-checkout on a prepared node)
        return real_open(file, mode)
    if text is None:
        raise _unknown_file(trace, "reads", file)
    return io.BytesIO(text.encode()) if "b" in mode else io.StringIO(text)


def _unknown_file(trace: Any, does: str, file: Any) -> BaseException:
    """A refusal of a downloaded file whose content import does not know."""
    refusal: BaseException = trace.refuse(_unknown_text(trace, does, file))
    return refusal


def _unknown_text(trace: Any, does: str, file: Any) -> str:
    """Why a downloaded file's content is not known; for a ``config.json``, where import looks for
    one (``knowledge/checkpoints.py``)."""
    repo, name = trace.downloaded(file)
    where = f"miles/import.yaml checkpoints: has no {name} of {repo}"
    if name == CONFIG:
        cached = "models--" + repo.replace("/", "--")
        where = (
            f"not in miles/import.yaml, nor in your Hugging Face cache ({cached} under $HF_HOME/hub or"
            f" ~/.cache/huggingface/hub): pass --hf-config {repo}=FILE"
        )
    return (
        f"{does} {file}, which `hf download {repo}` would have written: import does not know its"
        f" content ({where})"
    )


def _stat_downloads(trace: Any, real_stat: Callable[..., Any]) -> Callable[..., Any]:
    """``Path.exists()`` and ``os.path.isfile`` of a downloaded file import knows: it is there; of a
    download's folder: it is there, a folder (``if not isdir(DIR): download`` downloads once)."""

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        refuse_prepared(trace, path, "looks up")
        found = None if isinstance(path, int) else trace.downloaded(path)
        if found is None or _there(path):
            return real_stat(path, *args, **kwargs)
        if trace.stand_in(path) is not None:
            return real_stat(__file__)  # a regular file
        if not found[1]:
            return real_stat(os.path.dirname(__file__))  # a folder
        if found[1] == CONFIG and len(trace.unknown_configs) < MAX_UNKNOWN:  # a model repo has one
            told = _unknown_text(trace, "looks up", path)  # the reason, if the test then fails on it
            trace.unknown_configs += [] if told in trace.unknown_configs else [told]
        return real_stat(path, *args, **kwargs)  # not there: whether the repo holds it is not known

    return stat


def _looked_up(trace: Any, real: Callable[..., Any]) -> Callable[..., Any]:
    """``os.access`` of what a prepare call returns, which was never made here: refused."""

    def looked_up(path: Any, *args: Any, **kwargs: Any) -> Any:
        refuse_prepared(trace, path, "looks up")
        return real(path, *args, **kwargs)

    return looked_up


def _linked(trace: Any, skipped: Callable[..., None]) -> Callable[..., None]:
    """``os.symlink``, recorded and not done (``skipped``); a link to a download's folder is that
    download's folder too, whose listing is refused and whose files read as the download's."""

    def symlink(source: Any, link: Any, *args: Any, **kwargs: Any) -> None:
        skipped(source, link, *args, **kwargs)
        if isinstance(source, (str, bytes, os.PathLike)) and isinstance(link, (str, bytes, os.PathLike)):
            made = os.path.abspath(os.fsdecode(os.fspath(link)))
            found = trace.downloaded(os.path.join(os.path.dirname(made), os.fsdecode(os.fspath(source))))
            if found is not None and not found[1]:  # relative to the link's folder, as a link's target is
                trace.downloads[made] = found[0]

    return symlink


def _there(path: Any) -> bool:
    """Whether ``path`` is there for real (os.stat's own answer, past the guard's stand-ins)."""
    try:
        _REAL_STAT(path)
    except (OSError, ValueError, TypeError):
        return False
    return True


def _recorded_file_io(trace: Any, real: type[_io.FileIO]) -> type[_io.FileIO]:
    class RecordedFileIO(real):  # type: ignore[valid-type, misc]
        def __init__(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> None:
            if WRITE_MODES & set(mode) and not isinstance(file, int):
                file, mode = _written(trace, file, "w" in mode or "x" in mode), mode.replace("x", "w")
            super().__init__(file, mode, *args, **kwargs)

    return RecordedFileIO


def _recorded_os_open(trace: Any, real_open: Callable[..., int]) -> Callable[..., int]:
    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITE_FLAGS:
            whole = bool(flags & os.O_CREAT and flags & (os.O_TRUNC | os.O_EXCL))
            target = _written(trace, path, whole)
            if target == os.devnull:
                return real_open(os.devnull, flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC))
            return real_open(target, (flags | os.O_CREAT | os.O_TRUNC) & ~os.O_EXCL, 0o600)
        return real_open(path, flags, *args, **kwargs)

    return open_


def _written(trace: Any, path: Any, whole: bool) -> str:
    """Where a write goes: a whole file the test's own code writes, to a private copy whose text
    import reads back (a prepare step writes it); anything else, nowhere, recorded."""
    target = trace.capture(path) if whole else None
    if target is None:
        trace.record("effect", what=f"writes {path}")
        return os.devnull
    return str(target)
