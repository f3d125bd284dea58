"""keyring: a fresh session keyring for the child, joined before it execs.

A process inherits its parent's session keyring: without this, code from a checkout could read a
key the caller holds there and leave one for the next run. ``KEYCTL_JOIN_SESSION_KEYRING`` with
no name gives the calling process (the child, between fork and exec) a new, empty, anonymous one,
which everything it starts shares and which is gone when they are. In the isolated mode the
system call filter (``seccomp.py``) refuses every keyring call besides; under ``--trust-checkout``
the fresh keyring is the only wall.
"""

from __future__ import annotations

import errno
import os
import platform
from collections.abc import Callable

from runner.sandbox import seccomp

JOIN_SESSION_KEYRING = 1  # KEYCTL_JOIN_SESSION_KEYRING, <linux/keyctl.h>
# a kernel without keyrings, or a container whose own filter refuses them: its children cannot
# reach the caller's keys either (they inherit that filter)
NO_KEYRINGS = (errno.ENOSYS, errno.EPERM)


def joiner(machine: str | None = None) -> Callable[[], None]:
    """A function that joins a fresh session keyring, for ``preexec_fn``: everything it calls is
    looked up now, in the parent, so that the child between fork and exec only makes the call (each
    sandbox run looks it up again: microseconds beside the process it starts)."""
    machine = machine or platform.machine()
    if seccomp.unsupported(machine):
        return lambda: None  # the isolated mode refuses to run there; --trust-checkout runs as the caller
    import ctypes  # here: the CLI's start-up never needs it

    [keyctl] = seccomp.numbers(machine, ["keyctl"])
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long

    def join() -> None:
        if syscall(ctypes.c_long(keyctl), ctypes.c_long(JOIN_SESSION_KEYRING), None) < 0:
            code = ctypes.get_errno()
            if code not in NO_KEYRINGS:
                raise OSError(code, f"cannot join a fresh session keyring: {os.strerror(code)}")

    return join
