"""results: what a sandboxed run left in its results folder, read back within bounds; and the host
folders of ``--trust-checkout`` runs that a SIGKILL left behind, removed at the next start.

The isolated child's results come through a pipe from ``collect.py`` (its folder is a tmpfs of the
sandbox's own, gone with it). Under ``--trust-checkout`` the folder is on the host, read here with
the same bounds; it is named after the process that made it (pid and start time), so that a later
run-matrix can tell a folder whose maker is gone from one still in use, and remove only those.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from runner.sandbox import collect

PREFIX = "run-matrix-sandbox-"
_OURS = re.compile(rf"{PREFIX}(\d+)-(\d+)-[A-Za-z0-9_]+")  # PREFIX, the maker's pid and start, mkdtemp's


@dataclass(frozen=True)
class Results:
    files: dict[str, bytes] = field(default_factory=dict)
    problem: str = ""  # why none came back, for people: what the child did to its results folder


def too_many(most: int) -> str:
    return f"left more than {most} files in its results folder, where run-matrix reads back {most} at most"


def decode(data: bytes, cut: bool, max_bytes: int, max_files: int) -> Results:
    """The files ``collect.py`` sent (``cut``: it sent more than a results folder can hold)."""
    if cut:
        return Results(problem=f"sent more than its results folder holds ({max_bytes} bytes)")
    if not data:  # collect.py never got to send (the child's time ran out, or it ended collect.py)
        return Results()
    if data[: len(collect.MAGIC)] != collect.MAGIC or len(data) < len(collect.MAGIC) + collect.HEADER.size:
        return Results(problem="garbled its results")
    at = len(collect.MAGIC)
    (count,) = collect.HEADER.unpack_from(data, at)
    if count > max_files:
        return Results(problem=too_many(max_files))
    at += collect.HEADER.size
    files: dict[str, bytes] = {}
    while at < len(data) and len(files) < count:
        if at + collect.ENTRY.size > len(data):
            return Results(problem="garbled its results")
        size_of_name, size = collect.ENTRY.unpack_from(data, at)
        at += collect.ENTRY.size
        name, at = os.fsdecode(data[at : at + size_of_name]), at + size_of_name
        files[name], at = data[at : at + size], at + size
    if at != len(data) or any(len(body) > max_bytes or "/" in name for name, body in files.items()):
        return Results(problem="garbled its results")
    return Results(files)


def read_folder(out: Path, max_bytes: int, max_files: int) -> Results:
    """The files in a host folder (``--trust-checkout``), as ``collect.py`` would send them."""
    count, files = collect.gather(str(out), max_files, max_bytes)
    return Results(problem=too_many(max_files)) if count > max_files else Results(dict(files))


def host_folder() -> Path:
    """A new private folder for one ``--trust-checkout`` run, named after this process."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{_started(os.getpid())}-"))


def remove_leftovers(folder: Path | None = None) -> list[Path]:
    """Remove the folders of ``host_folder`` whose maker has ended (a run killed before it could):
    only a real folder (no link), owned by this user, named so, of a process that no longer runs."""
    folder = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = _OURS.fullmatch(entry.name)
            if match is None or _started(int(match[1])) == match[2]:
                continue
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
                shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link inside
                removed.append(Path(entry.path))
    return removed


def _started(pid: int) -> str:
    """The start time of process ``pid`` (``/proc/PID/stat`` field 22), '' when none runs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rpartition(b")")[2].split()[19].decode()
    except (OSError, IndexError):
        return ""
