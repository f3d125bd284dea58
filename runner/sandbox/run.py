"""run: start one sandboxed child, read its output within bounds, and end it with all it started."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from runner.errors import EnvironmentProblem, printable
from runner.redact import Redactor
from runner.sandbox import bwrap, keyring, results
from runner.sandbox.limits import Limits, tasks_of

OUT_VARIABLE = bwrap.OUT_VARIABLE  # the child's one writable folder; the files it leaves there come back
END_WAIT_S = 5.0  # how long the end of what the child started is waited for, at the most
DEFAULT_LIMITS = Limits()
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
FRAMING = 4096  # collect.py's bytes besides the files' own, at the most (and 512 a file)


@dataclass(frozen=True)
class Outcome:
    """What one sandboxed run left: its exit status, its output (bounded, secrets scrubbed), its files."""

    returncode: int  # negative: killed by that signal
    output: str
    output_cut: bool  # more was printed than Limits.output; the rest was dropped
    timed_out: bool  # killed at Limits.wall_s
    isolated: bool  # False only under trust=True
    files: dict[str, bytes] = field(default_factory=dict)  # regular files left in $RUN_MATRIX_OUT
    results_problem: str = ""  # why ``files`` is empty although the child left some (too many, ...)


# mutable: filled chunk by chunk while the child's pipe is read
@dataclass
class _Stream:
    """One pipe read until its end, ``room`` bytes of it kept."""

    room: int
    kept: bytearray = field(default_factory=bytearray)
    cut: bool = False  # more came than ``room``; the rest was read and dropped

    def take(self, chunk: bytes) -> None:
        left = self.room - len(self.kept)
        self.kept += chunk[: max(left, 0)]
        self.cut = self.cut or len(chunk) > left


def run(
    argv: Sequence[str],
    *,
    reads: Iterable[Path] = (),
    cwd: Path,
    env: Mapping[str, str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    trust: bool = False,
    secret_names: Iterable[str] = (),
    links: Sequence[tuple[Path, str]] = (),
) -> Outcome:
    """Run ``argv`` in ``cwd`` with ``env`` (and nothing of the caller's environment), seeing only
    ``reads`` and ``links`` (made again: where, what it names) besides the system and Python;
    refuses (``IsolationUnavailable``) where the machine cannot isolate it, unless ``trust``."""
    results.remove_leftovers()
    if trust:
        return _trusted(list(argv), cwd, env or {}, limits, secret_names)
    reads = [Path(path) for path in reads]
    tasks = tasks_of(_isolated_user(reads))
    pipe, write_end = os.pipe()
    channels = bwrap.Channels(bwrap.filter_pipe(), write_end)
    child_env = {**BASE_ENV, "HOME": bwrap.HOME, **(env or {})}
    line = bwrap.command(
        argv, reads=reads, cwd=cwd, env=child_env, limits=limits, channels=channels, links=links
    )
    try:
        child = _start(argv[0], line, {}, None, limits, tasks, (channels.seccomp, channels.results))
    finally:
        os.close(channels.seccomp)
        os.close(write_end)  # collect.py holds it now: the pipe ends when the sandbox does
    with os.fdopen(pipe, "rb", buffering=0) as sent:
        output, back, timed_out = _capture(child, limits, sent)
    found = results.decode(bytes(back.kept), back.cut, limits.file_size, limits.results_files)
    return _outcome(child, output, timed_out, limits, secret_names, found, isolated=True)


def _trusted(
    argv: list[str], cwd: Path, env: Mapping[str, str], limits: Limits, secret_names: Iterable[str]
) -> Outcome:
    """``argv`` as the caller, with the same limits and environment, its results folder and HOME in
    a host folder of its own (removed after, or at the next start if run-matrix is killed first)."""
    folder = results.host_folder()
    try:
        out, home = folder / "out", folder / "home"
        out.mkdir()
        home.mkdir()
        child_env = {**BASE_ENV, OUT_VARIABLE: str(out), **env, "HOME": str(home)}
        child = _start(argv[0], argv, child_env, cwd, limits, tasks_of(os.getuid()), ())
        output, _, timed_out = _capture(child, limits, None)
        found = results.read_folder(out, limits.file_size, limits.results_files)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _outcome(child, output, timed_out, limits, secret_names, found, isolated=False)


def _outcome(
    child: subprocess.Popen[bytes],
    output: _Stream,
    timed_out: bool,
    limits: Limits,
    secret_names: Iterable[str],
    found: results.Results,
    isolated: bool,
) -> Outcome:
    text = shown(bytes(output.kept), output.cut, limits, secret_names)
    return Outcome(child.returncode, text, output.cut, timed_out, isolated, found.files, found.problem)


def shown(printed: bytes, cut: bool, limits: Limits, secret_names: Iterable[str]) -> str:
    """What a child printed (``limits.output`` bytes of it; ``cut``: it printed more) as its outcome
    shows it: scrubbed of the caller's secret values, its escape codes escaped (its lines kept), as
    whatever shows it may quote it on a terminal."""
    said = Redactor.of(os.environ, secret_names)(printed[: limits.output].decode("utf-8", "replace"))
    text = printable(said, lines=True)
    if cut or len(printed) > limits.output:
        text += f"\n[run-matrix: output cut at {limits.output} bytes]"
    return text


def _start(
    name: str,
    line: list[str],
    env: dict[str, str],
    cwd: Path | None,
    limits: Limits,
    tasks: int,
    pass_fds: Sequence[int],
) -> subprocess.Popen[bytes]:
    """The child, in a process session and a session keyring of its own (it and all it starts are
    ended together), its limits set before it execs, its output (stderr too) on one pipe."""
    join_keyring = keyring.joiner()

    def before_exec() -> None:
        limits.apply(tasks)
        join_keyring()

    try:
        return subprocess.Popen(
            line,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=pass_fds,
            preexec_fn=before_exec,
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


def _capture(
    child: subprocess.Popen[bytes], limits: Limits, sent: BinaryIO | None
) -> tuple[_Stream, _Stream, bool]:
    """Read the child's output (keeping ``limits.output`` bytes) and what collect.py ``sent``
    (within the results' bound) until both end, the child has ended or its time is up; then end
    its process group, whatever is left of it."""
    assert child.stdout is not None
    deadline = time.monotonic() + limits.wall_s
    output, back = _Stream(limits.output), _Stream(limits.results + FRAMING + 512 * limits.results_files)
    streams = {child.stdout.fileno(): output, **({sent.fileno(): back} if sent else {})}
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready = selector.select(timeout=min(left, 0.2))
            if not ready and child.poll() is not None:  # ended; only something it left holds a pipe
                break
            for key, _ in ready:
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    streams[key.fd].take(chunk)
                else:
                    selector.unregister(key.fd)
    _end(child)
    child.stdout.close()
    return output, back, timed_out


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
