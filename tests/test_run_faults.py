"""Faults while running, for real: a real local Ray, the fake miles checkout, run-matrix as a process.

Each fault must leave a complete report and JUnit file (or an exit-3 reason before any work),
no job run-matrix submitted still running, and no process or temp dir it started. Every wait
here has its own deadline, so a regression fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.run.processes import Identity, in_session
from tests.test_run_on_ray import FAKE_MILES, bystanders, specs, users_cluster  # noqa: F401 (fixtures)

pytestmark = pytest.mark.allow_subprocess
RUN_MATRIX = [sys.executable, "-c", "from runner.cli import console; console()"]


def start(*argv: str, limit_file_size: int | None = None) -> subprocess.Popen[str]:
    """run-matrix as its own process, in the current directory (the test's tmp_path)."""

    def limit() -> None:
        if limit_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

    return subprocess.Popen(
        [*RUN_MATRIX, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit
    )


def wait_for(what: str, predicate: Callable[[], Any], process: subprocess.Popen[str] | None = None, seconds: float = 90) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := predicate()):
        if process is not None and process.poll() is not None:
            raise AssertionError(f"run-matrix exited ({process.returncode}) before {what}: {process.communicate()}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def log_says(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.exists() and text in path.read_text(errors="replace")


def the_record(state: Path) -> Callable[[], dict[str, Any] | None]:
    """The one run record under ``state`` once it names a job (None before)."""

    def read() -> dict[str, Any] | None:
        for path in (state / "runs").glob("*.json"):
            try:
                data: dict[str, Any] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # being replaced
            if data["jobs"]:
                return data
        return None

    return read


def finish(process: subprocess.Popen[str], seconds: float = 120) -> tuple[int, str]:
    _, err = process.communicate(timeout=seconds)
    return process.returncode, err


def report(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    data = json.loads(path.read_text())
    return data, data["cells"][0]


def test_outputs_and_options_are_checked_before_any_work(cli, specs, tmp_path, capsys, monkeypatch):  # noqa: F811
    specs("async")
    bad_junit = cli("run", "m/fake/async.yaml", "--junit", "missing/junit.xml", "--report", "out")
    assert (bad_junit.code, bad_junit.err) == (
        3,
        "run-matrix: cannot write the reports:\n  --junit missing/junit.xml: the folder missing does not exist\n",
    )
    (tmp_path / "out").write_text("")
    bad_logs = cli("run", "m/fake/async.yaml", "--log-dir", "out/logs")
    assert (bad_logs.code, bad_logs.err) == (3, "run-matrix: --log-dir out/logs: cannot create it: Not a directory\n")
    assert not (tmp_path / "models").exists() and not (tmp_path / "run-matrix-logs").exists()  # nothing ran
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path / "out"))  # a file: no records there
    no_record = cli("run", "m/fake/async.yaml", "--log-dir", "logs")
    assert (no_record.code, no_record.err) == (
        3,
        f"run-matrix: cannot record the run in {tmp_path}/out/runs: Not a directory "
        "(set RUN_MATRIX_STATE_DIR to a writable folder)\n",
    )
    assert not (tmp_path / "logs").exists()  # the log folder it made for nothing is gone
    for value in ("nan", "inf", "-1"):
        with pytest.raises(SystemExit) as exited:
            cli("run", "m/fake/async.yaml", "--timeout", value)
        assert exited.value.code == 2
        expected = f"argument --timeout: {value!r}: expected a finite number of seconds > 0"
        assert capsys.readouterr().err.endswith(expected + "\n")


def test_a_full_disk_stops_the_job_and_still_writes_the_reports(specs, users_cluster, tmp_path):  # noqa: F811
    specs("async", extra="env: {FAKE_MILES_CHATTER: '3000', FAKE_MILES_SLEEP: '120'}")
    process = start(
        "m/fake/async.yaml", "--ray-address", users_cluster.address, "--log-dir", "logs", "--skip-prepare",
        "--report", "report.json", "--junit", "junit.xml", limit_file_size=64 * 1024,
    )  # fmt: skip
    code, err = finish(process)
    data, cell = report(tmp_path / "report.json")
    # the history store is a file too: it cannot grow either, which ends the run with exit 3
    assert (code, data["complete"], cell["status"]) == (3, True, "error"), err
    assert "run-matrix: history store history.sqlite: disk I/O error" in err
    submission = cell["attempts"][0]["submission_id"]
    assert cell["reason"] == (
        f"cannot write the log logs/fake-async.log: File too large; stopped during running: {submission}"
    )
    assert users_cluster.status(submission) == "STOPPED"
    assert 'errors="1"' in (tmp_path / "junit.xml").read_text()
    assert (tmp_path / "logs" / "fake-async.log").stat().st_size <= 64 * 1024
    assert "Traceback" not in err
    assert not list((tmp_path / "state" / "runs").iterdir())  # the run ended: its record is gone


def test_a_killed_run_leaves_its_head_and_cleanup_stops_it(cli, specs, users_cluster, bystanders, tmp_path, monkeypatch):  # noqa: F811
    specs("async", extra="env: {FAKE_MILES_SLEEP: '300'}")
    monkeypatch.setenv("RUN_MATRIX_GPUS", "amd:8")
    process = start("m/fake/async.yaml", "--log-dir", "logs", "--skip-prepare", "--report", "report.json")
    wait_for("step 0", log_says(tmp_path / "logs" / "fake-async.log", "step 0:"), process)
    record = the_record(tmp_path / "state")()
    assert record is not None and record["owner"]["pid"] == process.pid
    (head,) = record["sessions"]
    leader, temp_dir = head["leader"]["pid"], Path(head["temp_dir"])
    process.send_signal(signal.SIGKILL)  # as the OOM killer would: no clean-up runs
    process.communicate(timeout=30)
    assert len(in_session(leader)) > 5 and temp_dir.is_dir()  # its Ray head lives on, for now
    data = json.loads((tmp_path / "report.json").read_text())
    assert (data["complete"], data["cells"]) == (False, [])  # written at the start, before any cell ended

    began = time.monotonic()
    result = cli("cleanup")
    assert time.monotonic() - began < 20  # the job is stopped first: Ray's head then exits at once
    assert result.code == 0, result.out + result.err
    assert result.out.startswith(f"run {record['run_id']} (pid {process.pid}, logs {tmp_path}/logs) died and left:\n")
    assert f"  stopped: Ray head (pid {leader}, temp dir {temp_dir}): " in result.out
    assert f"  stopped: removed {temp_dir}\n" in result.out
    assert in_session(leader) == [] and not temp_dir.exists()
    assert list((tmp_path / "state" / "runs").iterdir()) == []
    assert cli("cleanup").out == "no dead runs left anything behind\n"
    assert users_cluster.alive()
    assert [p.poll() for p in bystanders] == [None] * 4


def test_a_killed_run_on_a_users_cluster_has_its_job_stopped_by_the_next_run(cli, specs, users_cluster, bystanders, tmp_path):  # noqa: F811
    specs("slow", extra="env: {FAKE_MILES_SLEEP: '300'}")
    specs("fast")
    process = start("m/fake/slow.yaml", "--ray-address", users_cluster.address, "--log-dir", "logs", "--skip-prepare")
    wait_for("step 0", log_says(tmp_path / "logs" / "fake-slow.log", "step 0:"), process)
    (job,) = the_record(tmp_path / "state")()["jobs"]
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert users_cluster.status(job["submission_id"]) == "RUNNING"

    second = cli("run", "m/fake/fast.yaml", "--ray-address", users_cluster.address, "--skip-prepare", "--log-dir", "logs2")
    assert second.code == 0, second.err
    assert f"died and left:\n  stopped: job {job['submission_id']} on {users_cluster.address}\n" in second.err
    assert users_cluster.status(job["submission_id"]) == "STOPPED"
    assert users_cluster.alive()  # its processes were never touched
    assert [p.poll() for p in bystanders] == [None] * 4
    assert list((tmp_path / "state" / "runs").iterdir()) == []


def test_sigterm_during_a_prepare_step_stops_the_step_and_all_it_started(specs, users_cluster, tmp_path, monkeypatch):  # noqa: F811
    specs("async")
    monkeypatch.setenv("FAKE_HF_SLEEP", "300")
    process = start("m/fake/async.yaml", "--ray-address", users_cluster.address, "--log-dir", "logs", "--report", "report.json", "--junit", "junit.xml")
    log = tmp_path / "logs" / "fake-async.log"
    wait_for("the download", log_says(log, "fake hf: pid "), process)
    words = next(line for line in log.read_text().splitlines() if line.startswith("fake hf: pid ")).split()
    hf, child = Identity.of(int(words[3])), Identity.of(int(words[-1]))
    assert hf is not None and child is not None
    process.send_signal(signal.SIGTERM)
    code, err = finish(process, 60)
    assert code == 130, err
    data, cell = report(tmp_path / "report.json")
    assert (data["complete"], data["stopped_by"], cell["status"]) == (True, "SIGTERM", "interrupted")
    assert cell["reason"] == "interrupted (SIGTERM) during prepare: model (hf-download)"
    assert [p["name"] for p in cell["prepare"]] == ["dirs"]  # the step it stopped is not reported as run
    assert not hf.still_running() and not child.still_running()
    assert 'errors="1"' in (tmp_path / "junit.xml").read_text()
    assert list((tmp_path / "state" / "runs").iterdir()) == []


def test_a_run_killed_during_a_prepare_step_leaves_it_to_cleanup(cli, specs, tmp_path, monkeypatch):  # noqa: F811
    specs("async")
    monkeypatch.setenv("FAKE_HF_SLEEP", "300")
    process = start("m/fake/async.yaml", "--ray-address", "http://127.0.0.1:9", "--no-preflight", "--log-dir", "logs")
    log = tmp_path / "logs" / "fake-async.log"
    wait_for("the download", log_says(log, "fake hf: pid "), process)
    words = next(line for line in log.read_text().splitlines() if line.startswith("fake hf: pid ")).split()
    hf, child = Identity.of(int(words[3])), Identity.of(int(words[-1]))
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert hf is not None and hf.still_running() and child is not None and child.still_running()
    result = cli("cleanup")
    assert result.code == 0, result.out
    assert f"  stopped: prepare step (pid {hf.pid}: " in result.out
    assert not hf.still_running() and not child.still_running()


def test_sigterm_during_the_clean_up_after_ctrl_c_still_cleans_up(specs, bystanders, tmp_path, monkeypatch):  # noqa: F811
    specs("async", extra="env: {FAKE_MILES_SLEEP: '300'}")
    monkeypatch.setenv("RUN_MATRIX_GPUS", "amd:8")
    process = start("m/fake/async.yaml", "--log-dir", "logs", "--skip-prepare", "--report", "report.json")
    wait_for("step 0", log_says(tmp_path / "logs" / "fake-async.log", "step 0:"), process)
    (head,) = the_record(tmp_path / "state")()["sessions"]
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the job is being stopped, or the head
    process.send_signal(signal.SIGTERM)
    code, err = finish(process)
    assert code == 130, err
    data, cell = report(tmp_path / "report.json")
    assert (data["complete"], cell["status"]) == (True, "interrupted")
    # the first signal handled names the cause; on a loaded machine the SIGTERM may be handled first
    assert cell["reason"] in (
        "interrupted (Ctrl-C); the job was stopped",
        "interrupted (SIGTERM); the job was stopped",
    )
    assert in_session(head["leader"]["pid"]) == [] and not Path(head["temp_dir"]).exists()
    assert list((tmp_path / "state" / "runs").iterdir()) == []
    assert [p.poll() for p in bystanders] == [None] * 4


def test_two_runs_in_one_second_keep_their_own_logs_and_records(specs, users_cluster, tmp_path):  # noqa: F811
    specs("async")
    argv = ("m/fake/async.yaml", "--ray-address", users_cluster.address, "--skip-prepare")
    first = start(*argv, "--report", "first.json")
    second = start(*argv, "--report", "second.json")
    finished = [finish(p) for p in (first, second)]
    assert [code for code, _ in finished] == [0, 0], [err for _, err in finished]
    logs = [report(tmp_path / name)[1]["log"] for name in ("first.json", "second.json")]
    assert logs[0] != logs[1] and all(log.startswith("run-matrix-logs/") for log in logs)
    for log in logs:
        assert "fake miles train_async.py: " in (tmp_path / log).read_text()
    assert len([p for p in (tmp_path / "run-matrix-logs").iterdir() if p.is_dir()]) == 2  # and history.sqlite
    assert list((tmp_path / "state" / "runs").iterdir()) == []


class BrokenView:
    """A live view with a bug: it fails on the job's first metric line."""

    def started(self, cell_id: str, watched: tuple[str, ...]) -> None: ...
    def phase(self, cell_id: str, text: str) -> None: ...
    def finished(self, result: Any) -> None: ...
    def close(self) -> None: ...

    def output(self, cell_id: str, line: str) -> None:
        if "step 0:" in line:
            raise RuntimeError("the view broke")

    def metrics(self, cell_id: str, found: Any) -> None: ...


def test_a_fault_of_run_matrix_stops_the_job_and_the_cell_says_so(specs, users_cluster, tmp_path):  # noqa: F811
    from runner.cli.run import plan, select_cells
    from runner.run import session
    from runner.run.outputs import Outputs
    from runner.run.plan import Options
    from runner.run.record import Ledger

    specs("async", extra="env: {FAKE_MILES_SLEEP: '300'}")
    planned = [plan(each) for each in select_cells(["m/fake/async.yaml"], None, FAKE_MILES)]
    options = Options(FAKE_MILES, users_cluster.address, tmp_path, dict(os.environ), skip_prepare=True, run_id="r1")
    ledger = Ledger.open(tmp_path / "state", "r1", tmp_path)
    outputs = Outputs.checked(None, tmp_path / "report.json", None)
    result = session.run(planned, options, BrokenView(), ledger, outputs.write)
    (cell,) = result.cells
    submission = cell.attempts[0].submission_id
    assert (cell.status.value, cell.reason) == (
        "error",
        f"run-matrix failed during running: {submission}: RuntimeError: the view broke",
    )
    assert (cell.attempts[0].outcome, cell.attempts[0].detail) == ("stopped", "stopped by run-matrix: the view broke")
    assert users_cluster.status(submission) == "STOPPED"
    assert not ledger.holds_anything
    assert json.loads((tmp_path / "report.json").read_text())["cells"][0]["status"] == "error"
    ledger.close()
