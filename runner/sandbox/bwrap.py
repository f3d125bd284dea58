"""bwrap: the isolated child's command line (bubblewrap), and whether this machine can run it.

bubblewrap rather than ``unshare`` directly: one small, audited program (Debian's ``bubblewrap``)
sets up every namespace and mount from its arguments, works as root and, where user namespaces
are allowed, as an ordinary user; ``unshare`` would leave the read-only bind mounts, the private
``/proc`` and the cleanup of the mount tree to code of ours.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.errors import EnvironmentProblem
from runner.memos import remember
from runner.sandbox import seccomp
from runner.sandbox.limits import Limits

NOBODY = 65534
HOME = "/tmp/home"
OUT = "/run-matrix-out"  # the child's results folder: a tmpfs of the sandbox's own
OUT_VARIABLE = "RUN_MATRIX_OUT"  # names OUT to the child; the files it leaves there come back
COLLECT = Path(__file__).resolve().parent / "collect.py"
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
NAMESPACES = ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
DROP_TO_NOBODY = (
    "setpriv",
    f"--reuid={NOBODY}",
    f"--regid={NOBODY}",
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
)


class IsolationUnavailable(EnvironmentProblem):
    """This machine cannot isolate checkout code; only ``--trust-checkout`` runs it."""


@dataclass(frozen=True)
class Channels:
    """The descriptors bubblewrap inherits: the filter it loads, and where the results go."""

    seccomp: int  # read end of a pipe holding seccomp.program()
    results: int  # collect.py writes the results folder's files to it


def command(
    argv: Sequence[str],
    *,
    reads: Iterable[Path],
    cwd: Path,
    env: Mapping[str, str],
    limits: Limits,
    channels: Channels,
    links: Sequence[tuple[Path, str]] = (),
) -> list[str]:
    """``bwrap ... -- collect.py ... -- argv``: ``argv`` run in ``cwd`` under the system call filter,
    with only ``reads`` (read-only), ``links`` (each made again: where, what it names), a private
    ``/tmp`` and a private results folder (``OUT``)."""
    root = os.geteuid() == 0
    line = ["bwrap", *NAMESPACES, "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if not root:
        line.append("--unshare-user")
    line += ["--ro-bind", "/usr", "/usr", *_system_links(), "--proc", "/proc", "--dev", "/dev"]
    line += ["--perms", "1777", "--size", str(limits.scratch), "--tmpfs", "/tmp"]
    line += ["--perms", "0777", "--dir", HOME]
    line += ["--perms", "0777", "--size", str(limits.results), "--tmpfs", OUT]  # the results folder
    made: set[Path] = {Path("/"), Path("/usr"), Path("/tmp")}
    bound = _outermost([*_runtime(), *reads])
    for path in bound:
        line += [*_parents(path, made), "--ro-bind", str(path), str(path)]
    for link, target in _new_links(links, bound):
        line += [*_parents(link, made), "--symlink", target, str(link)]
    line += ["--chdir", str(cwd), "--clearenv", "--seccomp", str(channels.seccomp)]
    for name, value in {**env, OUT_VARIABLE: OUT}.items():
        line += ["--setenv", name, value]
    if root:  # bwrap keeps these two for setpriv alone, which drops them and every other
        line += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", *DROP_TO_NOBODY]
    else:
        line.append("--")
    collector = [sys.executable, "-I", "-S", "-B", str(COLLECT), str(channels.results)]
    return [*line, *collector, str(limits.results_files), str(limits.file_size), OUT, "--", *argv]


def filter_pipe() -> int:
    """The read end of a pipe that holds the system call filter for this machine, for ``--seccomp``."""
    program = seccomp.program(platform.machine())
    read, write = os.pipe()
    with os.fdopen(write, "wb") as pipe:  # far below a pipe's buffer: written whole, never blocks
        pipe.write(program)
    return read


def _system_links() -> list[str]:
    """``/bin``, ``/lib``, ... as the machine has them: links into ``/usr``, or folders bound read-only."""
    args: list[str] = []
    for name in SYSTEM_LINKS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return args


def _runtime() -> list[Path]:
    """What a Python child needs besides ``/usr``: the interpreter's installation and run-matrix."""
    import runner

    interpreter = Path(os.path.realpath(sys.executable)).parent.parent
    places = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), interpreter}
    places.add(Path(runner.__file__).resolve().parent)
    cache = Path("/etc/ld.so.cache")
    return [*places, *([cache] if cache.is_file() else [])]


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Each path once, resolved, without those inside another or inside ``/usr``; parents first."""
    resolved = sorted({Path(os.path.realpath(p)) for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(path == k or k in path.parents for k in [Path("/usr"), *kept]):
            kept.append(path)
    return kept


def _new_links(links: Sequence[tuple[Path, str]], bound: Sequence[Path]) -> list[tuple[Path, str]]:
    """The links not already there: one in a bound folder, in ``/usr`` or of the system's own
    (``/bin``) is seen as it is."""
    shown = [Path("/usr"), *bound, *(Path(name) for name in SYSTEM_LINKS)]
    made: list[tuple[Path, str]] = []
    for link, target in links:
        if not any(link == k or k in link.parents for k in shown) and link not in (m for m, _ in made):
            made.append((link, target))
    return made


def _parents(path: Path, made: set[Path]) -> list[str]:
    """``--dir`` for each missing parent of ``path`` (bwrap would make them unreadable to nobody)."""
    args: list[str] = []
    for parent in reversed(path.parents):
        if parent not in made:
            made.add(parent)
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


@remember(
    "host", "whether this machine isolates checkout code: every sandbox run asks, a probe costs a process"
)
def isolation_problem(machine: str | None = None) -> str | None:
    """Why checkout code cannot be isolated here (on ``machine``, default: this one's architecture),
    or ``None`` when it can (tried once per process)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed, so the sandbox cannot drop root"
    unsupported = seccomp.unsupported(machine or platform.machine())
    if unsupported is not None:
        return unsupported
    channels = Channels(filter_pipe(), results=1)  # the probe's results go to its captured output
    python = [sys.executable, "-I", "-S", "-c", "pass"]
    probe = command(python, reads=[], cwd=Path("/"), env={}, limits=Limits(), channels=channels)
    try:
        done = subprocess.run(
            probe, stdin=subprocess.DEVNULL, capture_output=True, pass_fds=[channels.seccomp], timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not start: {error}"
    finally:
        os.close(channels.seccomp)
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {done.returncode}"]
        return f"bubblewrap cannot create the namespaces it needs here ({said[-1]})"
    return None


def unavailable(reason: str) -> IsolationUnavailable:
    return IsolationUnavailable(
        f"cannot isolate code from the miles checkout on this machine: {reason}.\n"
        "  ==> run-matrix runs checkout code (test scripts, presets, launchers) only in a sandbox with no "
        "network and no view of your files; pass --trust-checkout to run it without that isolation, "
        "as yourself, if you trust this checkout"
    )
