"""reads at launch: the flag values a cell reads from files an earlier cell of the spec wrote, and
those its own prepare calls returned (``$${prepared:FUNCTION}``).

Read where run-matrix runs (the node, or the head of a cluster: see docs/running.md), just before
the cell's job is submitted: a regular file of at most ``reads.MAX_BYTES``, opened without blocking
(a FIFO would wait forever), reached through no link (a link could name any file of the node),
UTF-8 text, converted as the reference says. Anything else fails the cell with the file and the
reason; nothing is guessed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

from runner.results.outcome import ReadRecord
from runner.spec.runtime import reads


class Unreadable(Exception):
    """A value cannot be read at launch: the cell fails with this message."""


def values(found: Mapping[str, Mapping[str, str]]) -> tuple[ReadRecord, ...]:
    """Each value the launch reads (``Launch.reads``), read now; Unreadable at the first that fails."""
    records = []
    for read in found.values():
        text = _text(read["flag"], read["path"])
        try:
            value = reads.convert(text, read["as"])
        except ValueError as exc:
            raise Unreadable(f"{read['flag']} reads {read['path']} at launch, which {exc}") from None
        records.append(ReadRecord(read["flag"], read["path"], value, read["reference"]))
    return tuple(records)


def returned(found: Mapping[str, Mapping[str, Any]], results: Mapping[str, str]) -> dict[str, str]:
    """What the prepare calls the flags take returned (``Launch.prepared``; ``results``: by step name),
    by function; Unreadable at the first whose step did not run (``--skip-prepare``): nothing fills
    its flags."""
    taken = {}
    for entry in found.values():
        if entry["step"] not in results:
            raise Unreadable(
                f"{', '.join(entry['flags'])} takes what prepare step {entry['step']} ({entry['call']})"
                " returns, but --skip-prepare skipped that step: nothing fills it; run without"
                " --skip-prepare"
            )
        taken[entry["function"]] = results[entry["step"]]
    return taken


def filled(argv: Sequence[str], records: Sequence[ReadRecord]) -> tuple[str, ...]:
    """``argv`` with each read reference replaced by the value read."""
    by_reference = {record.reference: record.value for record in records}
    return tuple(by_reference.get(token, token) for token in argv)


def _text(flag: str, path: str) -> str:
    said = f"{flag} reads {path} at launch"
    try:
        descriptor = _open(path, said)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise Unreadable(
                f"{said}, which is missing: an earlier cell of the spec writes it (run the spec whole;"
                " a cell selected alone with -k has no earlier cell)"
            ) from None
        if exc.errno == errno.ELOOP:
            raise Unreadable(f"{said}, which is a link: only a regular file is read") from None
        raise Unreadable(f"{said}, which cannot be opened: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise Unreadable(f"{said}, which is not a regular file")
    with contextlib.closing(os.fdopen(descriptor, "rb")) as file:
        data = file.read(reads.MAX_BYTES + 1)
    if len(data) > reads.MAX_BYTES:
        raise Unreadable(f"{said}, which holds more than {reads.MAX_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable(f"{said}, which is not UTF-8 text") from None


def _open(path: str, said: str) -> int:
    """``path`` opened one folder at a time from ``/``, none of them, nor the file, through a link
    (``O_NOFOLLOW`` on each step: a link swapped in between two steps is refused too)."""
    if not path.startswith("/"):
        raise Unreadable(f"{said}, which is not an absolute path")
    *folders, name = path.split("/")[1:]
    at = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        walked = ""
        for folder in folders:
            walked += f"/{folder}"
            try:
                step = os.open(folder, _FOLDER, dir_fd=at)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(walked):
                    raise Unreadable(
                        f"{said}, which is reached through a link ({walked}){_NO_LINK}"
                    ) from None
                raise
            os.close(at)
            at = step
        return os.open(name, _FILE, dir_fd=at)
    finally:
        os.close(at)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NO_LINK = ": only a regular file is read, with no link on the way"
