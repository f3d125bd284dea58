"""seccomp: the system calls the isolated child may not make, as the classic BPF program bubblewrap
loads (``--seccomp FD``) just before it runs the child.

A test script never needs the kernel's keyrings, to trace another process, io_uring, BPF, perf
events, userfaultfd, new namespaces or mounts, nor a Unix socket (the host's daemons listen on
them, and a read-only bind does not stop ``connect()``). Each is refused with ``ENOSYS`` (as
though this kernel had no such call: libraries fall back, as they do on older kernels), and
``socket(AF_UNIX, ...)`` with ``EAFNOSUPPORT``; ``socketpair`` stays allowed (asyncio and
multiprocessing make their own pairs).

System call numbers differ by architecture, so the program first checks the ``arch`` field of
``seccomp_data`` and kills a process that calls through any other one (on x86_64: the i386
``int 0x80`` entry); x86_64's x32 calls (numbers with bit 30 set) are refused too. Built here, in
Python: no libseccomp. The numbers are the kernel's (``asm/unistd_64.h``, ``asm-generic/unistd.h``);
``tests/test_sandbox.py`` checks them against the headers where those are installed.
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Sequence
from dataclasses import dataclass

AF_UNIX = 1
X32_BIT = 0x40000000
# the calls refused, in both tables below
REFUSED = (
    "keyctl", "add_key", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd",
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "open_tree_attr", "unshare", "setns",
)  # fmt: skip
# numbers added to every table at once since Linux 5.1 (io_uring_setup)
_SHARED = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "pidfd_getfd": 438, "mount_setattr": 442, "open_tree_attr": 467,
}  # fmt: skip


@dataclass(frozen=True)
class Arch:
    """One architecture's ``AUDIT_ARCH_*`` value and system call numbers."""

    audit: int
    numbers: dict[str, int]
    x32: bool = False  # calls with X32_BIT set are another ABI under the same audit value


_X86_64 = {
    "keyctl": 250, "add_key": 248, "request_key": 249, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "mount": 165, "umount2": 166, "pivot_root": 155, "unshare": 272,
    "setns": 308, "socket": 41, "socketpair": 53, **_SHARED,
}  # fmt: skip
_AARCH64 = {  # the generic table (asm-generic/unistd.h)
    "keyctl": 219, "add_key": 217, "request_key": 218, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "mount": 40, "umount2": 39, "pivot_root": 41, "unshare": 97,
    "setns": 268, "socket": 198, "socketpair": 199, **_SHARED,
}  # fmt: skip
ARCHES = {"x86_64": Arch(0xC000003E, _X86_64, x32=True), "aarch64": Arch(0xC00000B7, _AARCH64)}

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> spell it
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in seccomp_data (args[0]'s low word: both are little-endian)
ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
REFUSE = 0x00050000 | errno.ENOSYS  # SECCOMP_RET_ERRNO
REFUSE_UNIX = 0x00050000 | errno.EAFNOSUPPORT


class Unsupported(Exception):
    """No table of system call numbers for this machine: the filter cannot be built."""


def unsupported(machine: str) -> str | None:
    """Why the sandbox cannot filter system calls on ``machine`` (``platform.machine()``), or None."""
    if machine in ARCHES:
        return None
    return (
        f"the sandbox's system call filter knows the system call numbers of {' and '.join(ARCHES)} only, "
        f"and this machine is {machine or 'of an architecture Python cannot name'}"
    )


def program(machine: str) -> bytes:
    """The filter for a child on ``machine``: ``struct sock_filter`` instructions, native order."""
    problem = unsupported(machine)
    if problem is not None:
        raise Unsupported(problem)
    arch = ARCHES[machine]
    # [load arch, jump if ours, kill] then one block for our arch: a label is an index to jump to
    code: list[tuple[int, int, int | str, int | str]] = [
        (_LOAD_WORD, _ARCH, 0, 0),
        (_JUMP_EQUAL, arch.audit, 1, 0),
        (_RETURN, KILL_PROCESS, 0, 0),
        (_LOAD_WORD, _NR, 0, 0),
    ]
    if arch.x32:
        code.append((_JUMP_AT_LEAST, X32_BIT, "refuse", 0))
    code += [(_JUMP_EQUAL, arch.numbers[name], "refuse", 0) for name in REFUSED]
    code += [
        (_JUMP_EQUAL, arch.numbers["socket"], 0, "allow"),
        (_LOAD_WORD, _ARG0, 0, 0),
        (_JUMP_EQUAL, AF_UNIX, 0, "allow"),
        (_RETURN, REFUSE_UNIX, 0, 0),
    ]
    labels = {"allow": len(code), "refuse": len(code) + 1}
    code += [(_RETURN, ALLOW, 0, 0), (_RETURN, REFUSE, 0, 0)]
    return b"".join(_encode(index, *line, labels) for index, line in enumerate(code))


def _encode(index: int, op: int, k: int, true: int | str, false: int | str, labels: dict[str, int]) -> bytes:
    """One instruction; a jump to a label becomes the offset from the next instruction."""

    def offset(target: int | str) -> int:
        return target if isinstance(target, int) else labels[target] - index - 1

    return struct.pack("=HBBI", op, offset(true), offset(false), k)


def numbers(machine: str, names: Sequence[str]) -> list[int]:
    """The numbers of ``names`` on ``machine`` (for the keyring call, and for the tests)."""
    return [ARCHES[machine].numbers[name] for name in names]
