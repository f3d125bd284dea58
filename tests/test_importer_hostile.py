"""Hostile test scripts against `run-matrix import`: every route out of the sandbox that a script
could try. Each case runs the real command (in-process) on a script in a folder of its own and
then checks what must hold whatever the script did:

* a canary folder of the caller's (outside the script's folder) and a canary file beside the
  script are unchanged;
* a TCP and a UDP listener on loopback received nothing;
* a bystander process (ours) is alive;
* the caller's secret (in run-matrix's environment and in its HOME) is nowhere: not in the written
  spec, not in the output, not in any file under the test's folder;
* no process the script started is left;
* the command either refused with the script's name (exit 2) or imported (exit 0), within its
  time limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import resource
import shutil
import socket
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runner.sandbox import Limits, seccomp
from tests.conftest import DATA, Result

pytestmark = pytest.mark.allow_subprocess

SECRET = "wandb-0123456789-secret-of-the-caller"
HF_SECRET = "hf_secret_token_of_the_callers_home"
TIMEOUT_S = 4  # the --timeout of every case; a case may take at most this plus start-up


@dataclass
class World:
    """Everything outside the sandbox that a hostile script aims at."""

    folder: Path  # the script's folder (bound read-only into the sandbox)
    canary: Path  # a folder of the caller's, not in the sandbox
    tcp: socket.socket
    udp: socket.socket
    bystander: subprocess.Popen[bytes]
    received: list[bytes] = field(default_factory=list)

    def values(self) -> dict[str, object]:
        return {
            "canary": str(self.canary),
            "beside": str(self.folder / "beside.txt"),
            "tcp": self.tcp.getsockname()[1],
            "udp": self.udp.getsockname()[1],
            "bystander": self.bystander.pid,
            "parent": os.getpid(),
            "token": str(Path(os.environ["HOME"]) / ".cache/huggingface/token"),
        }


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mode)
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_repo: Path) -> Iterator[World]:
    tmp_path.chmod(0o755)
    folder = tmp_path / "checkout"
    folder.mkdir()
    shutil.copy(DATA / "import" / "_glm5.py", folder)
    (folder / "beside.txt").write_text("the checkout's own file\n")
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("precious\n")
    canary.chmod(0o777)  # even a world-writable folder of the caller's is out of reach
    home = tmp_path / "home"
    (home / ".cache/huggingface").mkdir(parents=True)
    (home / ".cache/huggingface/token").write_text(HF_SECRET)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET + "-2")
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    tcp.settimeout(0.1)
    udp = socket.socket(type=socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.1)
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    w = World(folder, canary, tcp, udp, bystander)
    stop = threading.Event()
    listening = threading.Thread(target=_listen, args=(w, stop), daemon=True)
    listening.start()
    yield w
    stop.set()
    listening.join()
    bystander.kill()
    bystander.wait()
    tcp.close()
    udp.close()


def _listen(w: World, stop: threading.Event) -> None:
    while not stop.is_set():
        for receive in (lambda: w.tcp.accept()[0].recv(100) or b"<connected>", lambda: w.udp.recv(100)):
            with contextlib.suppress(TimeoutError, OSError):
                w.received.append(receive())


def processes_naming(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in line:
                found.append(f"{entry.name}: {line}")
    return found


def import_hostile(cli: Callable[..., Result], w: World, body: str) -> tuple[Result, float]:
    script = w.folder / "test_hostile.py"
    code = textwrap.dedent(body).format(**w.values())
    script.write_text(f'import _glm5\nMISC = ""\n{code}\n_glm5.launch(misc=MISC)\n')
    before = snapshot(w.canary), (w.folder / "beside.txt").read_bytes()
    started = time.monotonic()
    result = cli(
        "import", str(script), "--hardware", "h200", "-o", str(w.folder.parent / "out.yaml"),
        "--timeout", str(TIMEOUT_S), "--without-checkout",
    )  # fmt: skip
    took = time.monotonic() - started
    time.sleep(0.2)  # let the listeners see anything in flight
    assert (snapshot(w.canary), (w.folder / "beside.txt").read_bytes()) == before
    assert w.received == []
    assert w.bystander.poll() is None, "the bystander was killed"
    assert processes_naming(str(script)) == []
    written = [p.read_bytes() for p in w.folder.parent.rglob("*") if p.is_file() and "home" not in p.parts]
    for secret in (SECRET, HF_SECRET):
        assert secret not in result.out + result.err
        assert not any(secret.encode() in text for text in written)
    assert "Traceback" not in result.err
    return result, took


def refused(result: Result, line: int | None, reason: str) -> None:
    assert result.code == 2, result.err
    where = f"test_hostile.py:{line}" if line else "test_hostile.py"
    assert f"{where}: error [import]: test_hostile.py cannot be imported: it {reason}" in result.err


# The script is `import _glm5`, `MISC = ""`, the body (from line 3; format fields: World.values()),
# then `_glm5.launch(misc=MISC)`.
# Refused: the body, the line run-matrix must name (None: the script as a whole), the reason.
REFUSED: dict[str, tuple[str, int | None, str]] = {
    "posix.system": (
        "import posix\nposix.system('touch {canary}/pwned')",
        4,
        "starts a process or sends a signal: posix.system",
    ),
    "importlib.reload(os).system": (
        "import importlib, os\nimportlib.reload(os).system('touch {canary}/pwned')",
        4,
        "starts a process or sends a signal: posix.system",
    ),
    "posix.fork": ("import posix\nposix.fork()", 4, "starts a process or sends a signal: posix.fork"),
    "os.fork + setsid daemon": (
        "import os\nif os.fork() == 0:\n    os.setsid()\n    while True: pass",
        4,
        "starts a process or sends a signal: os.fork",
    ),
    "multiprocessing": (
        "import multiprocessing as m\nm.Process(target=print).start()",
        4,
        "starts a process or sends a signal: os.fork",
    ),
    "subprocess": (
        "import subprocess\nsubprocess.run(['touch', '{canary}/pwned'])",
        4,
        "starts a process: subprocess",
    ),
    "os.kill": ("import os\nos.kill({bystander}, 9)", 4, "starts a process or sends a signal: os.kill"),
    "pidfd_send_signal": (
        "import signal\nsignal.pidfd_send_signal(3, 9)",
        4,
        "starts a process or sends a signal: signal.pidfd_send_signal",
    ),
    "socket connect": (
        "import socket\nsocket.create_connection(('127.0.0.1', {tcp}))",
        4,
        "looks up a host name: socket.getaddrinfo",
    ),
    "socket sendmsg": (
        "import socket\nsocket.socket(type=socket.SOCK_DGRAM).sendmsg([b'x'], [], 0, ('127.0.0.1', {udp}))",
        4,
        "opens a network connection: socket.sendmsg",
    ),
    "_socket connect": (
        "import _socket\n_socket.socket().connect(('127.0.0.1', {tcp}))",
        4,
        "raises ConnectionRefusedError",
    ),
    "memory bomb": ("block = bytearray(3 << 30)", 3, "raises MemoryError"),
    "infinite loop": ("while True:\n    pass", None, f"did not finish within {TIMEOUT_S} s"),
    "ctypes daemon, then a loop past the limit": (
        "import ctypes, select\nlibc = ctypes.CDLL(None)\nif libc.fork() == 0:\n    libc.setsid()\n"
        "    while True: select.select([], [], [], 1)\nwhile True: pass",
        None,
        f"did not finish within {TIMEOUT_S} s",
    ),
    "read the parent's environ": ("open('/proc/{parent}/environ').read()", 3, "raises FileNotFoundError"),
    "read the caller's HOME": ("open('{token}').read()", 3, "raises FileNotFoundError"),
    "read a root-only file": ("open('/etc/shadow').read()", 3, "raises FileNotFoundError"),
    # the sandbox shows the script's own file and the modules it imports (_glm5.py), not its neighbours
    "read a file beside the script": ("open('{beside}').read()", 3, "raises FileNotFoundError"),
    "hide the trace among thousands of files": (
        "import ctypes, os\nlibc = ctypes.CDLL(None)\nfor n in range(5000):\n"
        "    libc.creat(os.environ['RUN_MATRIX_OUT'].encode() + b'/%05d' % n, 0o644)",
        None,
        "left more than 16 files in its results folder, where run-matrix reads back 16 at most",
    ),
}
# Imported: the guards record these (nothing done) or are walked around, and the sandbox makes
# the attempt harmless; the script goes on and launches.
IMPORTED: dict[str, str] = {
    # binding reaches nothing: the sandbox's network namespace has only its own loopback (the
    # caller's listener holds this port on the real one)
    "socket listen": "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', {tcp}))\ns.listen()",
    "ctypes system": "import ctypes\nctypes.CDLL(None).system(b'touch {canary}/pwned {beside}; kill -9 {bystander}')",
    "ctypes kill": "import ctypes\nctypes.CDLL(None).kill({bystander}, 9)",
    "ctypes fork + setsid daemon": (
        "import ctypes, select\nlibc = ctypes.CDLL(None)\n"
        "if libc.fork() == 0:\n    libc.setsid()\n    while True: select.select([], [], [], 1)"
    ),
    "_socket udp": "import _socket\n_socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp}))",
    "rename a caller's file": "import posix\nposix.rename('{canary}/keep.txt', '{canary}/gone.txt')",
    "writes through _io, FileIO, posix.open, mkfifo, lchown, setxattr": (
        "import _io, io, os, posix\n_io.open('{canary}/a', 'w').write('x')\nio.FileIO('{canary}/b', 'w').write(b'x')\n"
        "posix.open('{canary}/c', os.O_CREAT | os.O_WRONLY)\nos.mkfifo('{canary}/fifo')\nos.lchown('{canary}/keep.txt', 0, 0)\n"
        "os.setxattr('{canary}/keep.txt', 'user.x', b'1')"
    ),
    "threads writing files": (
        "import threading\nts = [threading.Thread(target=lambda i=i: open(f'{canary}/t{{i}}', 'w').write('x')) for i in range(8)]\n"
        "[t.start() for t in ts]\n[t.join() for t in ts]"
    ),
    "output flood": "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(512):\n    sys.stdout.write(chunk)",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_hostile_script_is_refused_at_its_line_and_harms_nothing(cli, world, case):
    body, line, reason = REFUSED[case]
    result, took = import_hostile(cli, world, body)
    refused(result, line, reason)
    assert took < TIMEOUT_S + 5


@pytest.mark.parametrize("case", sorted(IMPORTED))
def test_a_script_that_walks_around_the_guards_harms_nothing_and_imports(cli, world, case):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, took = import_hostile(cli, world, IMPORTED[case])
    assert result.code == 0, result.err
    assert took < TIMEOUT_S + 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: output is bounded


def test_what_the_sandbox_lets_a_script_see_goes_into_the_spec_without_secrets(cli, world):
    body = (
        "import glob, os\nseen = []\nfor path in glob.glob('/proc/*/environ'):\n"
        "    try: seen.append(open(path).read())\n    except OSError: pass\n"
        "MISC = f'--seed {{1000 + sum(\"wandb-0123\" in text for text in seen)}} '"
    )
    result, _ = import_hostile(cli, world, body)
    assert result.code == 0, result.err
    assert "    seed: 1000\n" in (world.folder.parent / "out.yaml").read_text()


def test_a_fork_bomb_stops_at_the_process_limit(cli, world):
    body = (
        "import ctypes, select\nlibc = ctypes.CDLL(None)\nforked = 0\nfor _ in range(500):\n"
        "    pid = libc.fork()\n    if pid == 0:\n        while True: select.select([], [], [], 1)\n"
        "    forked += pid > 0\nMISC = f'--seed {{forked}} '"
    )
    result, _ = import_hostile(cli, world, body)
    assert result.code == 0, result.err
    forked = int((world.folder.parent / "out.yaml").read_text().split("    seed: ")[1].split()[0])
    assert 0 < forked <= Limits().processes


def test_a_script_reaches_no_key_of_the_callers_and_no_refused_kernel_interface(cli, world):
    keyring = ctypes.CDLL(None, use_errno=True)
    keyctl, add_key = seccomp.numbers(platform.machine(), ["keyctl", "add_key"])
    if keyring.syscall(ctypes.c_long(keyctl), ctypes.c_long(1), None) < 0:  # this process's own keyring
        pytest.skip("this machine has no keyrings")
    assert keyring.syscall(ctypes.c_long(add_key), b"user", b"canary", SECRET.encode(), len(SECRET), -3) > 0
    calls = dict(zip(seccomp.REFUSED, seccomp.numbers(platform.machine(), seccomp.REFUSED), strict=True))
    body = (
        "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\nreached = 0\n"
        f"for nr in {sorted(calls.values())}:\n"
        "    reached += libc.syscall(L(nr), *[L(0)] * 6) >= 0 or ctypes.get_errno() != errno.ENOSYS\n"
        f"reached += libc.syscall(L({keyctl}), L(10), L(-3), b'user', b'canary', L(0)) > 0\n"
        "MISC = f'--seed {{1000 + reached}} '"
    )
    result, _ = import_hostile(cli, world, body)
    assert result.code == 0, result.err
    assert "    seed: 1000\n" in (world.folder.parent / "out.yaml").read_text()
