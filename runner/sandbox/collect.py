"""collect: inside the sandbox, run the child, then send back what it left in its results folder.

The isolated child's results folder is a tmpfs of the sandbox's own (``bwrap.OUT``, bounded by
``Limits.results``): nothing it writes there reaches the host's disk, and all of it is gone with
the sandbox, however run-matrix ends. This program runs first in the sandbox (as the child's user,
under its filter and limits), starts the child, waits for it, then writes the regular files of that
folder to the pipe ``FD`` — at most ``MAX_FILES`` of them (a folder holding more sends none, and
says how many it counted), none larger than ``MAX_BYTES`` — and ends with the child's exit status
(``128 + N`` when signal N ended it, as bubblewrap reports it).

  python -I -S -B collect.py FD MAX_FILES MAX_BYTES OUT -- ARGV...

The child runs as the same user and could write into that pipe: what comes back is read as the
child's own data, bounded (``results.py``). Standard library only: it runs without run-matrix
on the path, and ``results.py`` uses ``gather`` for the folder of ``--trust-checkout``.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
from collections.abc import Iterator, Sequence

MAGIC = b"RMO1"
HEADER = struct.Struct("<I")  # entries counted in the folder (at most MAX_FILES + 1)
ENTRY = struct.Struct("<HI")  # a file's name length, then its size; the name, then its bytes


def gather(out: str, max_files: int, max_bytes: int) -> tuple[int, Iterator[tuple[str, bytes]]]:
    """How many entries ``out`` holds (counted up to ``max_files + 1``), and its regular files in
    name order — none when it holds more than ``max_files``; never through a link, never a FIFO."""
    names: list[str] = []
    with os.scandir(out) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) > max_files:
                return len(names), iter(())
    return len(names), _files(out, sorted(names), max_bytes)


def _files(out: str, names: Sequence[str], max_bytes: int) -> Iterator[tuple[str, bytes]]:
    for name in names:
        try:
            fd = os.open(os.path.join(out, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_size <= max_bytes:
                yield name, handle.read(max_bytes)


def _send(fd: int, out: str, max_files: int, max_bytes: int) -> None:
    count, files = gather(out, max_files, max_bytes)
    _write(fd, MAGIC + HEADER.pack(count))
    for name, data in files:
        encoded = os.fsencode(name)
        _write(fd, ENTRY.pack(len(encoded), len(data)) + encoded)
        _write(fd, data)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: Sequence[str]) -> int:
    fd, max_files, max_bytes = (int(value) for value in argv[:3])
    out, command = argv[3], list(argv[5:])
    os.set_inheritable(fd, False)  # the child gets no copy of it
    child = os.fork()
    if child == 0:
        try:
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"run-matrix: cannot run {command[0]}: {error.strerror}\n".encode())
        os._exit(127)
    _, status = os.waitpid(child, 0)
    try:
        _send(fd, out, max_files, max_bytes)
    except OSError as error:  # the reader went away, or the child took the folder's files away
        os.write(2, f"run-matrix: results not sent: {error.strerror}\n".encode())
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
