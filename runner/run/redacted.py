"""redacted: a child's output copied line by line into its log, each line through the redactor.

A hook or service run-matrix starts inherits the caller's environment (its secrets included) and
may print them; its output therefore never goes to its log file directly, but through a pipe that
a thread of run-matrix's empties, writing each line redacted.
"""

from __future__ import annotations

import contextlib
import threading
from typing import IO

from runner.redact import Redactor

LONGEST = 1 << 20  # bytes of one line held at most: a longer one is written in pieces


def pump(source: IO[bytes], log: IO[bytes], redact: Redactor) -> threading.Thread:
    """Copy ``source`` into ``log`` (both closed at the end of ``source``) on a thread of its own."""
    thread = threading.Thread(target=_copy, args=(source, log, redact), daemon=True, name="log-pump")
    thread.start()
    return thread


def _copy(source: IO[bytes], log: IO[bytes], redact: Redactor) -> None:
    writing = True
    try:
        while line := source.readline(LONGEST):
            if writing:
                try:
                    log.write(redact.bytes(line))
                    log.flush()
                except (OSError, ValueError):  # a full disk: the rest is read, so the child never blocks
                    writing = False
    finally:
        with contextlib.suppress(OSError):
            source.close()
        with contextlib.suppress(OSError):
            log.close()
