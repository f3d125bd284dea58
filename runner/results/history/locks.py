"""locks: waiting for a SQLite history store another process holds, and saying so.

SQLite's own busy handler waits silently; a run whose store another program holds would sit for
a minute saying nothing. Here each wait is short (``FIRST_WAIT_S``), and a statement that still
finds the file locked says, once, who holds it (from ``/proc/locks``: the pid that has a lock on
the file, and its command line), then keeps trying up to ``BUSY_TIMEOUT_S``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

FIRST_WAIT_S = 1.0  # SQLite's busy handler waits this long before run-matrix says it is waiting
BUSY_TIMEOUT_S = 60.0  # a run writing the file holds its lock this long at most


def holder(path: Path) -> str:
    """Who holds a lock on ``path`` (or its ``-wal``/``-shm``): ``pid N: command``, or words saying
    it is not known (another container, no /proc)."""
    inodes = set()
    for name in (str(path), f"{path}-shm", f"{path}-wal"):
        try:
            found = os.stat(name)
        except OSError:
            continue
        inodes.add((os.major(found.st_dev), os.minor(found.st_dev), found.st_ino))
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "another process"
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6:
            continue  # a waiter, not a holder
        major, minor, inode = fields[5].split(":")
        if (int(major, 16), int(minor, 16), int(inode)) in inodes and int(fields[4]) != os.getpid():
            return _described(int(fields[4]))
    return "another process"


def _described(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:200]
    except OSError:
        return f"pid {pid}"
    command = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    return f"pid {pid}: {command.encode('unicode_escape').decode()}" if command else f"pid {pid}"


def when_not_locked(cursor: Any, statement: str, path: Path, shown: str) -> None:
    """``statement``, retried while SQLite says "database is locked", up to ``BUSY_TIMEOUT_S``;
    once it has waited ``FIRST_WAIT_S``, says on stderr that it waits and for whom. (``PRAGMA
    journal_mode = WAL`` needs the file to itself, and while another connection opens a new store
    SQLite answers at once, without the busy handler.)"""
    import sqlite3

    started = time.monotonic()
    said = False
    while True:
        try:
            cursor.execute(statement)
            return
        except sqlite3.OperationalError as error:
            waited = time.monotonic() - started
            if "database is locked" not in str(error) or waited > BUSY_TIMEOUT_S:
                raise
            if not said and waited >= FIRST_WAIT_S:
                print(
                    f"run-matrix: waiting for the history store (locked by {holder(path)}): {shown}",
                    file=sys.stderr,
                    flush=True,
                )
                said = True
            time.sleep(0.02)
