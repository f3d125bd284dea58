"""runner.sandbox: what the isolated child sees and may use, what comes back, and the fallback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner import sandbox
from runner.errors import EnvironmentProblem, ExitCode
from runner.sandbox import bwrap, results

pytestmark = pytest.mark.allow_subprocess


def python(code: str, tmp_path: Path, **options: object) -> sandbox.Outcome:
    tmp_path.chmod(0o755)
    return sandbox.run([sys.executable, "-I", "-c", code], cwd=tmp_path, reads=[tmp_path], **options)  # type: ignore[arg-type]


def test_the_child_sees_only_what_it_was_given(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_API_KEY", "a-secret-of-the-caller")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    code = (
        "import os, json\n"
        f"print(json.dumps([sorted(os.environ), os.path.exists({str(outside)!r}), os.path.exists('/etc/passwd'),"
        " sorted(os.listdir('/proc'))[:3], os.getuid(), os.listdir('.')]))"
    )
    (tmp_path / "given.txt").write_text("x")
    done = python(code, tmp_path, env={"SWITCH": "1"})
    assert done.returncode == 0, done.output
    names, sees_outside, sees_etc, pids, uid, listing = __import__("json").loads(done.output)
    assert names == ["HOME", "LANG", "PATH", "PWD", "PYTHONHASHSEED", "RUN_MATRIX_OUT", "SWITCH"]
    assert (sees_outside, sees_etc, listing) == (False, False, ["given.txt"])
    assert "1" in pids and str(os.getpid()) not in pids  # a PID namespace of its own
    assert uid == (bwrap.NOBODY if os.geteuid() == 0 else os.getuid())
    assert done.isolated


def test_what_the_child_cannot_change(tmp_path):
    code = (
        "import os\n"
        "for path in ('given.txt', '/usr/x', os.environ['HOME'] + '/x', os.environ['RUN_MATRIX_OUT'] + '/r'):\n"
        "    try:\n        open(path, 'w').write('x'); print('wrote', path)\n"
        "    except OSError as e:\n        print('refused', path, e.errno)\n"
    )
    (tmp_path / "given.txt").write_text("mine\n")
    done = python(code, tmp_path)
    lines = done.output.splitlines()
    assert [line.split()[0] for line in lines] == ["refused", "refused", "wrote", "wrote"]
    assert (tmp_path / "given.txt").read_text() == "mine\n"
    assert done.files == {"r": b"x"}


def test_limits_hold(tmp_path):
    limits = sandbox.Limits(file_size=1 << 20, open_files=32, address_space=512 << 20, output=1000)
    code = (
        "import os, sys\n"
        "try:\n    open('/tmp/big', 'wb').write(b'x' * (2 << 20))\nexcept OSError as e: print('fsize', e.errno)\n"
        "try:\n    [open('/dev/null') for _ in range(64)]\nexcept OSError as e: print('nofile', e.errno)\n"
        "try:\n    bytearray(1 << 30)\nexcept MemoryError: print('memory')\n"
        "sys.stdout.flush()\nsys.stdout.write('y' * 100000)\n"
    )
    done = python(code, tmp_path, limits=limits)
    assert done.output.startswith("fsize 27\nnofile 24\nmemory\nyyy")
    assert done.output_cut and done.output.endswith("\n[run-matrix: output cut at 1000 bytes]")
    assert len(done.output) < 1100


def test_cpu_and_wall_time_end_the_child_and_all_it_started(tmp_path):
    started = time.monotonic()
    done = python("while True: pass", tmp_path, limits=sandbox.Limits(cpu_s=1, wall_s=20))
    assert done.returncode == 128 + 9 and not done.timed_out  # SIGXCPU, then SIGKILL (bwrap reports 128+N)
    code = "import os, select\nif os.fork() == 0:\n    os.setsid()\nwhile True: select.select([], [], [], 1)"
    done = python(code, tmp_path, limits=sandbox.Limits(wall_s=1))
    assert done.timed_out and time.monotonic() - started < 10


def test_everything_the_child_started_has_ended_when_run_returns(tmp_path):
    marker = f"run-matrix-end-{os.getpid()}"
    code = f"import os\n{marker!r}\nfor _ in range(5):\n    os.fork()\nwhile True: pass"
    assert python(code, tmp_path, limits=sandbox.Limits(wall_s=1)).timed_out
    left = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                left.append(entry.name)
    assert left == []  # 32 busy processes, none still there: not even one the kernel was still ending


def test_results_never_follow_a_link_or_open_a_fifo(tmp_path):
    code = (
        "import os\nout = os.environ['RUN_MATRIX_OUT']\n"
        "os.symlink('/etc/shadow', out + '/link')\nos.mkfifo(out + '/fifo')\nopen(out + '/ok', 'w').write('1')"
    )
    done = python(code, tmp_path)
    assert done.files == {"ok": b"1"}


def test_a_folder_nobody_cannot_read_is_named(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the child runs as nobody only when run-matrix is root")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(EnvironmentProblem) as error:
        sandbox.run([sys.executable, "-c", "pass"], cwd=private, reads=[private])
    assert str(error.value).startswith(f"{private} is not readable to other users (mode drwx------)")


def test_without_isolation_only_trust_runs_checkout_code(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    bwrap.isolation_problem.cache_clear()
    try:
        with pytest.raises(sandbox.IsolationUnavailable) as error:
            python("pass", tmp_path)
        trusted = python("import os; print(os.path.exists('/etc/passwd'))", tmp_path, trust=True)
    finally:
        bwrap.isolation_problem.cache_clear()
    assert error.value.exit_code == ExitCode.ENVIRONMENT
    assert str(error.value).startswith(
        "cannot isolate code from the miles checkout on this machine: bubblewrap is not installed"
    )
    assert "pass --trust-checkout to run it without that isolation" in str(error.value)
    assert (trusted.output, trusted.isolated) == ("True\n", False)


def test_import_without_isolation_is_an_environment_error_until_trusted(cli, tmp_path, monkeypatch, in_repo):
    monkeypatch.setenv("PATH", str(tmp_path))
    bwrap.isolation_problem.cache_clear()
    script = "tests/data/import/test_glm5_744b_a40b_4layer.py"
    try:
        alone = ("--hardware", "h200", "--without-checkout")
        refused = cli("import", script, *alone, "-o", str(tmp_path / "a.yaml"))
        trusted = cli("import", script, *alone, "-o", str(tmp_path / "b.yaml"), "--trust-checkout")
    finally:
        bwrap.isolation_problem.cache_clear()
    assert refused.code == 3 and "bubblewrap is not installed" in refused.err
    assert not (tmp_path / "a.yaml").exists()
    assert trusted.code == 0, trusted.err


def test_the_childs_output_is_scrubbed_of_the_callers_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", "tok-123456789")
    done = python("print('tok-' + '123456789')", tmp_path)  # what it could only have guessed
    assert done.output == "${SERVICE_TOKEN}\n"


def test_the_childs_escape_codes_come_back_escaped_its_lines_kept(tmp_path):
    done = python(r"print('\x1b[31mRED\x1b]0;TITLE\x07\tnext\r'); print('line 2')", tmp_path)
    assert done.output == "\\x1b[31mRED\\x1b]0;TITLE\\x07\tnext\\r\nline 2\n"


def test_the_results_folder_holds_a_bounded_size_and_nothing_of_it_lands_on_the_host(tmp_path):
    code = (
        "import os\nout, written = os.environ['RUN_MATRIX_OUT'], 0\n"
        "for n in range(4):\n    with open(f'{out}/f{n}', 'wb') as f:\n        for _ in range(24):\n"
        "            try:\n                f.write(b'x' * (1 << 20)); f.flush(); written += 1\n"
        "            except OSError:\n                break\n"
        "print(written, out)"
    )
    done = python(code, tmp_path)
    written, out = done.output.split()
    assert int(written) <= sandbox.Limits().results >> 20 < 96  # MiB: it asked for 96
    assert sum(map(len, done.files.values())) <= sandbox.Limits().results
    assert not Path(out).exists()  # the folder was the sandbox's own


def test_a_results_folder_of_too_many_files_is_refused_whole_with_the_reason(tmp_path):
    code = "import os\nfor n in range(5000):\n    open(f\"{os.environ['RUN_MATRIX_OUT']}/{n:05}\", 'w')"
    for trust in (False, True):
        done = python(code, tmp_path, trust=trust)
        assert (done.returncode, done.files) == (0, {})
        assert done.results_problem == (
            "left more than 16 files in its results folder, where run-matrix reads back 16 at most"
        )


KILLED_RUN = """
import sys
from pathlib import Path
from runner import sandbox
code = "import os, time\\nopen(os.environ['RUN_MATRIX_OUT'] + '/big', 'wb').write(b'x' * (20 << 20))\\ntime.sleep({sleep})"
folder = Path(sys.argv[1])
sandbox.run([sys.executable, '-I', '-c', code, {marker!r}[::-1]], cwd=folder, reads=[folder], trust={trust})
"""


def start_and_kill(tmp_path: Path, trust: bool, sleep: float) -> tuple[Path, str]:
    """A run-matrix whose sandboxed child wrote 20 MiB of results, SIGKILLed before it could clean up."""
    temp, checkout, marker = (
        tmp_path / "tmp",
        tmp_path / "checkout",
        f"run-matrix-killed-{os.getpid()}-{trust}",
    )
    temp.mkdir()
    checkout.mkdir(mode=0o755)
    program = KILLED_RUN.format(marker=marker[::-1], trust=trust, sleep=sleep)  # only the child's names it
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(Path(__file__).parents[1])}
    process = subprocess.Popen([sys.executable, "-c", program, str(checkout)], env=env)
    deadline = time.monotonic() + 30
    while not running(marker) and time.monotonic() < deadline:  # the child has started
        time.sleep(0.05)
    time.sleep(1)  # and written its results
    process.kill()
    process.wait()
    return temp, marker


def running(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(entry.name)
    return found


def test_an_isolated_run_killed_by_sigkill_leaves_nothing_behind(tmp_path):
    temp, marker = start_and_kill(tmp_path, trust=False, sleep=60)
    deadline = time.monotonic() + 5
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(marker) == []  # bubblewrap's sandbox dies with its parent
    assert list(temp.iterdir()) == []  # its results were in the sandbox's own tmpfs


def test_a_trusted_run_killed_by_sigkill_is_cleaned_up_at_the_next_start(tmp_path):
    temp, marker = start_and_kill(
        tmp_path, trust=True, sleep=2
    )  # trusted, the child is not ended: it ends itself
    [left] = temp.iterdir()
    alive = temp / f"run-matrix-sandbox-{os.getpid()}-{results._started(os.getpid())}-inuse"
    alive.mkdir()  # a folder of a run-matrix still running (this one)
    (temp / "run-matrix-sandbox-1-2-link").symlink_to(tmp_path)  # named so, but a link
    (temp / "run-matrix-sandbox-keep").mkdir()  # named as older versions did: whose it is cannot be told
    deadline = time.monotonic() + 5
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert results.remove_leftovers(temp) == [left]
    assert sorted(p.name for p in temp.iterdir()) == sorted(
        [alive.name, "run-matrix-sandbox-1-2-link", "run-matrix-sandbox-keep"]
    )
