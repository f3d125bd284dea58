"""run: start one sandboxed child, read its output within bounds, and end it with all it started."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import EnvironmentProblem
from runner.redact import Redactor
from runner.sandbox import bwrap
from runner.sandbox.limits import Limits, tasks_of

OUT_VARIABLE = "RUN_MATRIX_OUT"  # the child's one writable folder; the files it leaves there come back
MAX_RESULTS = 16
END_WAIT_S = 5.0  # how long the end of what the child started is waited for, at the most
DEFAULT_LIMITS = Limits()
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}


@dataclass(frozen=True)
class Outcome:
    """What one sandboxed run left: its exit status, its output (bounded, secrets scrubbed), its files."""

    returncode: int  # negative: killed by that signal
    output: str
    output_cut: bool  # more was printed than Limits.output; the rest was dropped
    timed_out: bool  # killed at Limits.wall_s
    isolated: bool  # False only under trust=True
    files: dict[str, bytes] = field(default_factory=dict)  # regular files left in $RUN_MATRIX_OUT


def run(
    argv: Sequence[str],
    *,
    reads: Iterable[Path] = (),
    cwd: Path,
    env: Mapping[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    trust: bool = False,
    secret_names: Iterable[str] = (),
) -> Outcome:
    """Run ``argv`` in ``cwd`` with ``env`` (and nothing of the caller's environment), seeing only
    ``reads`` besides the system and Python; refuses (``IsolationUnavailable``) where the machine
    cannot isolate it, unless ``trust``."""
    reads = [Path(path) for path in reads]
    user = os.getuid() if trust else _isolated_user(reads)
    with tempfile.TemporaryDirectory(prefix="run-matrix-sandbox-") as folder:
        out, home = Path(folder) / "out", Path(folder) / "home"
        out.mkdir()
        home.mkdir()
        os.chown(out, user, user)
        child_env = {**BASE_ENV, "HOME": bwrap.HOME, OUT_VARIABLE: str(out), **(env or {})}
        if trust:
            line, popen_env, popen_cwd = list(argv), {**child_env, "HOME": str(home)}, cwd
        else:
            line = bwrap.command(argv, reads=reads, out=out, cwd=cwd, env=child_env, scratch=limits.scratch)
            popen_env, popen_cwd = {}, None
        child = _start(argv[0], line, popen_env, popen_cwd, limits, tasks_of(user))
        output, cut, timed_out = _capture(child, limits)
        text = Redactor.of(os.environ, secret_names)(output.decode("utf-8", "replace"))
        if cut:
            text += f"\n[run-matrix: output cut at {limits.output} bytes]"
        return Outcome(child.returncode, text, cut, timed_out, not trust, _results(out, limits))


def _start(
    name: str, line: list[str], env: dict[str, str], cwd: Path | None, limits: Limits, tasks: int
) -> subprocess.Popen[bytes]:
    """The child, in a process session of its own (it and all it starts are ended together), its
    limits set before it execs, its output (stderr too) on one pipe."""
    try:
        return subprocess.Popen(
            line,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=lambda: limits.apply(tasks),
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise EnvironmentProblem(f"cannot start the sandbox for {name}: {error}") from None


def _isolated_user(reads: Sequence[Path]) -> int:
    """The user the isolated child runs as (``nobody`` when run-matrix is root), once this machine
    is known to isolate and the child can read what it must."""
    problem = bwrap.isolation_problem()
    if problem is not None:
        raise bwrap.unavailable(problem)
    if os.geteuid() != 0:
        return os.getuid()
    _check_readable(reads)
    return bwrap.NOBODY


def _check_readable(reads: Sequence[Path]) -> None:
    """Run as root, the child is ``nobody``: what it must read has to be readable to others."""
    for path in reads:
        mode = path.stat().st_mode
        needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
        if mode & needed != needed:
            raise EnvironmentProblem(
                f"{path} is not readable to other users (mode {stat.filemode(mode)}), and the sandbox runs "
                f"checkout code as the unprivileged user nobody.\n  ==> chmod -R o+rX {path}, or pass "
                "--trust-checkout to run it as yourself, without isolation"
            )


def _capture(child: subprocess.Popen[bytes], limits: Limits) -> tuple[bytes, bool, bool]:
    """Read the child's output until it ends (keeping ``limits.output`` bytes) or its time is up;
    then end its process group, whatever is left of it."""
    assert child.stdout is not None
    deadline = time.monotonic() + limits.wall_s
    kept = bytearray()
    cut = timed_out = False
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not selector.select(timeout=min(left, 0.2)):
                if child.poll() is not None:  # ended; only something it left behind holds the pipe
                    break
                continue
            chunk = os.read(child.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            room = limits.output - len(kept)
            kept += chunk[: max(room, 0)]
            cut = cut or len(chunk) > room
    _end(child)
    child.stdout.close()
    return bytes(kept), cut, timed_out


def _end(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (ours: it was started in a session of its own), reap it,
    and return once what it started has ended too. In the isolated mode that ends bubblewrap and the
    PID namespace's first process, whose end the kernel holds back until all else in it has ended;
    bubblewrap's own end comes sooner, so that first process is waited for."""
    inner = _children(child.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + END_WAIT_S
    while any(_running(pid, started) for pid, started in inner) and time.monotonic() < deadline:
        time.sleep(0.01)


def _children(parent: int) -> list[tuple[int, str]]:
    """The processes whose parent is ``parent``, each with its start time (a pid can be reused)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[1] == str(parent):
                found.append((int(entry.name), fields[19]))
    return found


def _running(pid: int, started: str) -> bool:
    """Whether that process (not a later one with its pid) has not ended yet (a zombie has)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[19] == started and fields[0] != "Z"


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` from its state on (the name before it may hold spaces), or None once gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rpartition(b")")[2].decode().split()
    except OSError:
        return None


def _results(out: Path, limits: Limits) -> dict[str, bytes]:
    """The regular files the child left in ``out``: never through a link, never a FIFO, bounded."""
    files: dict[str, bytes] = {}
    for entry in sorted(os.listdir(out))[:MAX_RESULTS]:
        try:
            fd = os.open(out / entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_size <= limits.file_size:
                files[entry] = handle.read(limits.file_size)
    shutil.rmtree(out, ignore_errors=True)
    return files
