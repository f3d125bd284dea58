"""runner.sandbox.seccomp and keyring: the system calls the isolated child cannot make, on every
architecture the filter knows, and the keys it cannot reach."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import re
import socket
import struct
import sys
from pathlib import Path

import pytest

from runner import sandbox
from runner.sandbox import bwrap, seccomp

pytestmark = pytest.mark.allow_subprocess

MACHINE = platform.machine()
HEADERS = {
    "x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
    "aarch64": "/usr/include/asm-generic/unistd.h",
}
KEY = "run-matrix-canary"
SECRET = "a-key-of-the-callers-0123456789"
KEYCTL_SEARCH, KEYCTL_READ, SESSION_KEYRING = 10, 11, -3


def python(code: str, tmp_path: Path, **options: object) -> sandbox.Outcome:
    tmp_path.chmod(0o755)
    return sandbox.run([sys.executable, "-I", "-c", code], cwd=tmp_path, reads=[tmp_path], **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_the_numbers_are_the_kernels(machine):
    header = Path(HEADERS[machine])
    if not header.is_file():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    kernel = dict(re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text()))
    ours = seccomp.ARCHES[machine].numbers
    known = {name for name in ours if name in kernel}  # headers older than the kernel lack the newest
    assert {name: ours[name] for name in known} == {name: int(kernel[name]) for name in known}
    assert len(known) >= len(ours) - 1


def run_filter(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """What the kernel would do with a call: the classic BPF program run over one seccomp_data."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    pc, accumulator = 0, 0
    while True:
        op, true, false, k = code[pc]
        if op == 0x20:
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif op in (0x15, 0x35):
            taken = accumulator == k if op == 0x15 else accumulator >= k
            pc += true if taken else false
        else:
            assert op == 0x06
            return k
        pc += 1


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_the_program_refuses_what_it_says_on_each_architecture(machine):
    program, arch = seccomp.program(machine), seccomp.ARCHES[machine]
    for name in seccomp.REFUSED:
        assert run_filter(program, arch.numbers[name], arch.audit) == seccomp.REFUSE, name
    socket_nr, pair = arch.numbers["socket"], arch.numbers["socketpair"]
    assert run_filter(program, socket_nr, arch.audit, socket.AF_UNIX) == seccomp.REFUSE_UNIX
    assert run_filter(program, socket_nr, arch.audit, socket.AF_INET) == seccomp.ALLOW
    assert run_filter(program, pair, arch.audit, socket.AF_UNIX) == seccomp.ALLOW
    assert run_filter(program, 0, arch.audit) == seccomp.ALLOW  # read / io_setup
    assert run_filter(program, 0, 0x40000003) == seccomp.KILL_PROCESS  # i386's calls: another table
    if arch.x32:
        assert run_filter(program, seccomp.X32_BIT | arch.numbers["keyctl"], arch.audit) == seccomp.REFUSE


def test_an_architecture_without_a_table_is_refused_with_the_reason():
    reason = seccomp.unsupported("riscv64")
    assert reason == (
        "the sandbox's system call filter knows the system call numbers of x86_64 and aarch64 only, "
        "and this machine is riscv64"
    )
    with pytest.raises(seccomp.Unsupported):
        seccomp.program("riscv64")
    assert bwrap.isolation_problem("riscv64") == reason
    assert bwrap.unavailable(reason).exit_code == 3


def test_the_refused_calls_fail_as_though_the_kernel_had_none(tmp_path):
    calls = dict(zip(seccomp.REFUSED, seccomp.numbers(MACHINE, seccomp.REFUSED), strict=True))
    code = (
        "import ctypes, json\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
        f"calls = {calls!r}\nfound = {{}}\n"
        "for name, nr in calls.items():\n"
        "    done = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(0)] * 6)\n"
        "    found[name] = ctypes.get_errno() if done < 0 else 'succeeded'\n"
        "print(json.dumps(found))"
    )
    done = python(code, tmp_path)
    assert json.loads(done.output) == dict.fromkeys(seccomp.REFUSED, errno.ENOSYS)


def test_no_unix_socket_of_the_host_can_be_reached_and_socketpair_works(tmp_path):
    daemon = socket.socket(socket.AF_UNIX)
    daemon.bind(
        str(tmp_path / "daemon.sock")
    )  # in a folder the child is given, as a checkout's git fsmonitor
    daemon.listen()
    daemon.setblocking(False)
    os.chmod(tmp_path / "daemon.sock", 0o777)
    code = (
        "import socket\ntry:\n    socket.socket(socket.AF_UNIX).connect('daemon.sock'); print('connected')\n"
        "except OSError as e: print('unix', e.errno)\n"
        "a, b = socket.socketpair(); a.send(b'x'); print('pair', b.recv(1))\n"
        "print('inet', socket.socket(socket.AF_INET).fileno() > 0)"
    )
    done = python(code, tmp_path)
    assert done.output == f"unix {errno.EAFNOSUPPORT}\npair b'x'\ninet True\n"
    with pytest.raises(BlockingIOError):
        daemon.accept()
    daemon.close()


@pytest.mark.skipif(MACHINE != "x86_64", reason="i386's entry (int 0x80) is x86_64's")
def test_a_call_through_another_architectures_entry_kills_the_child(tmp_path):
    code = (
        "import ctypes, mmap\nm = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "m.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # i386 getpid: mov eax, 20; int 0x80; ret\n"
        "print(ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))())"
    )
    done = python(code, tmp_path)
    assert (done.returncode, done.output) == (128 + 31, "")  # SIGSYS, before it printed anything


def keyctl(*args: object) -> tuple[int, int]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    [nr] = seccomp.numbers(MACHINE, ["keyctl"])
    done = libc.syscall(ctypes.c_long(nr), *args)
    return done, ctypes.get_errno()


@pytest.fixture
def caller_key() -> int:
    """A key in a session keyring of this test process's own (a fresh one: the caller's real
    keyring is left alone), as the issue's attacker found one."""
    joined, _ = keyctl(ctypes.c_long(1), None)
    if joined < 0:
        pytest.skip("this machine has no keyrings")
    libc = ctypes.CDLL(None, use_errno=True)
    [add_key] = seccomp.numbers(MACHINE, ["add_key"])
    key = libc.syscall(
        ctypes.c_long(add_key), b"user", KEY.encode(), SECRET.encode(), len(SECRET), SESSION_KEYRING
    )
    assert key > 0
    return int(key)


# the child: search the session keyring for the caller's key, read it, and plant one of its own
KEY_THIEF = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
    "L = ctypes.c_long\nkeyctl, add_key = {numbers}\n"
    f"key = libc.syscall(L(keyctl), L({KEYCTL_SEARCH}), L({SESSION_KEYRING}), b'user', b'{KEY}', L(0))\n"
    "buffer = ctypes.create_string_buffer(256)\n"
    f"read = libc.syscall(L(keyctl), L({KEYCTL_READ}), L(key), buffer, L(256)) if key > 0 else -1\n"
    "print(buffer.value.decode() if read > 0 else f'no key {{ctypes.get_errno()}}')\n"
    f"libc.syscall(L(add_key), b'user', b'planted', b'x', L(1), L({SESSION_KEYRING}))"
)


@pytest.mark.parametrize("trust", [False, True], ids=["isolated", "trusted"])
def test_the_callers_keys_are_out_of_reach_and_none_is_planted(tmp_path, caller_key, trust):
    code = KEY_THIEF.format(numbers=seccomp.numbers(MACHINE, ["keyctl", "add_key"]))
    done = python(code, tmp_path, trust=trust)
    assert SECRET not in done.output
    # isolated: the filter refuses the call; trusted: a fresh session keyring holds no such key
    assert done.output == f"no key {errno.ENOSYS if not trust else errno.ENOKEY}\n", done.output
    planted, why = keyctl(
        ctypes.c_long(KEYCTL_SEARCH), ctypes.c_long(SESSION_KEYRING), b"user", b"planted", 0
    )
    assert (planted, why) == (-1, errno.ENOKEY)
