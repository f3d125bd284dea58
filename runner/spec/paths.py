"""paths: what a spec may name as a file, checked before anything is opened.

``extends:`` and the spec paths of the command line must be regular files: a directory, a
FIFO (which would block), a device (``/dev/zero`` never ends) or a symlink loop is refused
with what it is, not reported as missing; a spec is read only up to ``MAX_FILE_BYTES``. An
output (``-o``) is checked writable before any work.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from pathlib import Path

from runner.errors import EnvironmentProblem, Location, SpecError

MAX_FILE_BYTES = 1_000_000  # the largest spec here is 6 kB
# a profile or preset name: one path component, no "..", no separators
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def readable_file(path: Path, where: Location, key: str = "", named: str = "") -> None:
    """Raise a SpecError at ``where`` unless ``path`` is a regular file."""
    what = repr(named) if named else str(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            problem = f"{what} is a symlink loop ({path})"
        elif exc.errno in (errno.ENOENT, errno.ENOTDIR):
            problem = f"{what} does not exist (looked for {path})" if named else f"no such file: {path}"
        else:
            problem = f"{what} cannot be read: {exc.strerror}"
        raise _error(problem, key, where) from None
    if not stat.S_ISREG(mode):
        raise _error(
            f"{what} is not a file: it is {_kind(mode)}" + (f" ({path})" if named else ""), key, where
        )


def read_text(path: Path) -> str:
    """A spec's text: a regular file, at most MAX_FILE_BYTES, UTF-8; anything else is a SpecError."""
    readable_file(path, Location(path))
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError.one("yaml", f"cannot read {path}: {exc.strerror}", at=[Location(path)]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError.one(
            "budget",
            f"the file is larger than {MAX_FILE_BYTES:,} bytes",
            at=[Location(path)],
            hint="a spec is a few kilobytes; split it or check that this is the file you meant",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError.one(
            "yaml", f"not UTF-8: byte {raw[exc.start]:#x} at offset {exc.start}", at=[Location(path, line)]
        ) from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def _error(message: str, key: str, where: Location) -> SpecError:
    hint = "paths in extends: are relative to the file that names them." if key == "extends" else ""
    return SpecError.one("missing-file", message, key=key, at=[where], hint=hint)


def writable(path: Path) -> None:
    """Raise EnvironmentProblem (exit 3) unless ``path`` can be written: checked before any work."""
    if path.is_dir():
        raise EnvironmentProblem(f"cannot write {path}: it is a directory")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise EnvironmentProblem(f"cannot write {path}: {folder} is not a folder")
    try:  # access() says yes to root everywhere (/proc too); creating a file is the real answer
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".run-matrix-probe-"):
            pass
    except OSError as exc:
        # the folder that is missing is named, not the one that refused it: /proc/nope, not /proc
        missing = "" if folder == path.parent else _first_missing(path.parent, folder)
        made = f"the folder {missing} does not exist, and cannot be made in {folder}"
        why = made if missing else f"no file can be made in {folder}"
        raise EnvironmentProblem(f"cannot write {path}: {why}: {exc.strerror}") from None


def _first_missing(folder: Path, existing: Path) -> Path:
    """The folder of ``folder``'s ancestry right below ``existing``: the first one a write must make."""
    while folder.parent != existing:
        folder = folder.parent
    return folder
