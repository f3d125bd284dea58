"""cleanup stops what a dead run left only where it can prove it is that run's: never a reused pid."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from runner.run.cleanup import clean
from runner.run.processes import RUN_ID_VARIABLE, Identity, in_session
from runner.run.record import Ledger, Record, Session

pytestmark = pytest.mark.allow_subprocess

# A leader that starts one child carrying its environment and one with an empty environment
# (as a process of someone else's would be), each in a process group of its own.
LEADER = "(set -m; sleep 300 &); (set -m; env -i sleep 301 &); trap 'exit 0' TERM; echo ready; sleep 300 & wait"


def dead_owner() -> Identity:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return Identity(gone.pid, 1, ("run-matrix", "run", "x.yaml"))


def write_record(state: Path, record: Record) -> Path:
    runs = state / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"{record.run_id}.lock").touch()
    path = runs / f"{record.run_id}.json"
    path.write_text(json.dumps(record.to_json()))
    return path


def wait_for(predicate, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_reused_pid_is_never_stopped(tmp_path):
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)  # took a pid a dead head had
    try:
        then = Identity.of(stranger.pid)
        assert then is not None
        recorded = Identity(stranger.pid, then.start_ticks - 100, ("python", "-m", "ray.scripts.scripts", "start"))
        temp_dir = Path(tempfile.mkdtemp(prefix="run-matrix-ray-"))
        path = write_record(tmp_path, Record("r1", dead_owner(), "logs", [Session("ray-head", recorded, str(temp_dir))]))
        (cleaned,) = clean(tmp_path)
        assert cleaned.stopped == []
        assert cleaned.left == [
            f"Ray head (pid {stranger.pid}, temp dir {temp_dir}): pids [{stranger.pid}] are in its session "
            "but not provably this run's"
        ]
        assert stranger.poll() is None and temp_dir.is_dir()
        assert path.exists()  # kept: a later cleanup may find the session gone
    finally:
        stranger.kill()
        stranger.wait()
    temp_dir.rmdir()


def test_a_session_leader_named_in_a_forged_record_is_never_stopped(tmp_path):
    """pid, start time and command line are public: a record that copies them proves nothing."""
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)  # someone else's session leader
    try:
        wait_for(lambda: Identity.of(victim.pid) is not None and Identity.of(victim.pid).cmdline == ("sleep", "300"))  # type: ignore[union-attr]
        identity = Identity.of(victim.pid)
        assert identity is not None
        write_record(tmp_path, Record("forged", dead_owner(), "logs", [Session("prepare", identity)]))
        (cleaned,) = clean(tmp_path)
        assert cleaned.stopped == []
        assert cleaned.left == [
            f"prepare step (pid {victim.pid}: sleep 300): pids [{victim.pid}] are in its session "
            "but not provably this run's"
        ]
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_only_the_members_carrying_the_run_id_are_stopped_and_a_foreign_temp_dir_is_kept(tmp_path):
    env = {**os.environ, RUN_ID_VARIABLE: "r2"}
    leader = subprocess.Popen(["bash", "-c", LEADER], start_new_session=True, stdout=subprocess.PIPE, env=env)
    try:
        assert leader.stdout is not None and leader.stdout.readline() == b"ready\n"
        wait_for(lambda: len(in_session(leader.pid)) == 4)
        identity = Identity.of(leader.pid)
        assert identity is not None
        precious = tmp_path / "run-matrix-ray-precious"  # not in the system temp dir: never removed
        precious.mkdir()
        record = Record("r2", dead_owner(), "logs", [Session("ray-head", identity, str(precious))])
        write_record(tmp_path / "state", record)
        (cleaned,) = clean(tmp_path / "state")
        (foreign,) = in_session(leader.pid)
        assert Identity.of(foreign).cmdline == ("sleep", "301")  # type: ignore[union-attr]
        assert cleaned.stopped == [f"Ray head (pid {leader.pid}, temp dir {precious}): 3 processes"]
        assert cleaned.left == [
            f"Ray head (pid {leader.pid}, temp dir {precious}): pids [{foreign}] are in its session "
            "but not provably this run's"
        ]
        assert precious.is_dir()
        os.kill(foreign, 9)
        wait_for(lambda: in_session(leader.pid) == [])
        (again,) = clean(tmp_path / "state")  # the record kept what was left; now it is gone
        assert (again.stopped, again.left) == ([], [])
        assert list((tmp_path / "state" / "runs").iterdir()) == []
    finally:
        for pid in in_session(leader.pid):
            os.kill(pid, 9)
        leader.wait()


def test_a_live_run_is_never_cleaned_and_its_record_goes_when_it_ends(tmp_path):
    ledger = Ledger.open(tmp_path, "r3", tmp_path / "logs")
    helper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        ledger.started("prepare", helper)
        assert clean(tmp_path) == []  # its lock is held: alive
        assert helper.poll() is None
        data = json.loads(ledger.path.read_text())
        assert (data["run_id"], data["owner"]["pid"], data["sessions"][0]["leader"]["pid"]) == (
            "r3",
            os.getpid(),
            helper.pid,
        )
    finally:
        helper.kill()
        helper.wait()
    ledger.stopped(helper.pid)
    ledger.close()
    assert list((tmp_path / "runs").iterdir()) == []


def test_cleanup_with_nothing_to_do_and_a_dry_run(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path))
    assert (cli("cleanup").code, cli("cleanup").out) == (0, "no dead runs left anything behind\n")
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        recorded = Identity(stranger.pid, 1, ("hf", "download"))
        write_record(tmp_path, Record("r4", dead_owner(), "logs", [Session("prepare", recorded)]))
        dry = cli("cleanup", "--dry-run", "--format", "json")
        assert (dry.code, json.loads(dry.out)["runs"][0]["left"]) == (0, [f"prepare step (pid {stranger.pid}: hf download)"])
        real = cli("cleanup")
        assert real.code == 3 and "not provably this run's" in real.out
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
