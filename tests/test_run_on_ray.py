"""`run-matrix run` for real: a real Ray, the fake miles checkout, no GPU.

One Ray cluster plays the user's existing cluster (started here, in its own session, with
8 GPUs declared); most tests submit to it with --ray-address. One test lets run-matrix
start and stop its own head. Processes named like upstream's `pkill` targets (ray,
sglang, redis-server, miles) stand by: nothing run-matrix does may touch them or the
user's cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.run.cluster import free_ports
from runner.run.processes import in_session, stop_session
from tests.conftest import DATA, alive

pytestmark = pytest.mark.allow_subprocess
ray_jobs = pytest.importorskip("ray.job_submission")

FAKE_MILES = DATA / "fake-miles"
FAKE_BIN = DATA / "fake-bin"
MATRICES = Path(__file__).parents[1] / "matrices"
SECRET = "wandb-secret-value-42"


@dataclass(frozen=True)
class UsersCluster:
    process: subprocess.Popen[bytes]
    address: str

    def alive(self) -> bool:
        with urllib.request.urlopen(f"{self.address}/api/version", timeout=5) as response:
            return self.process.poll() is None and response.status == 200

    def status(self, submission_id: str) -> str:
        return str(ray_jobs.JobSubmissionClient(self.address).get_job_status(submission_id).value)


@pytest.fixture(scope="module")
def users_cluster() -> Iterator[UsersCluster]:
    """A Ray cluster run-matrix did not start (as a user's would be)."""
    temp = Path(tempfile.mkdtemp(prefix="rm-users-ray-"))
    names = ("port", "dashboard-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port")
    names += ("runtime-env-agent-port", "ray-client-server-port", "metrics-export-port")
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    argv = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--num-gpus", "8"]
    argv += ["--node-ip-address", "127.0.0.1", "--disable-usage-stats", "--temp-dir", str(temp)]
    argv += [token for name, port in ports.items() for token in (f"--{name}", str(port))]
    with (temp / "head.log").open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    cluster = UsersCluster(process, f"http://127.0.0.1:{ports['dashboard-port']}")
    deadline = time.monotonic() + 120
    while not _answers(cluster):
        assert process.poll() is None and time.monotonic() < deadline, (temp / "head.log").read_text()
        time.sleep(0.2)
    yield cluster
    stop_session(process, grace=30)
    shutil.rmtree(temp, ignore_errors=True)


def _answers(cluster: UsersCluster) -> bool:
    """The dashboard answers and the head node has registered (it may lag behind)."""
    from ray.util.state import list_nodes

    try:
        return cluster.alive() and bool(
            list_nodes(address=cluster.address, filters=[("state", "=", "ALIVE")])
        )
    except Exception:  # not up yet: connection refused, or the state API's own error
        return False


@pytest.fixture(scope="module")
def bystanders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes named like the ones upstream kills by name: run-matrix must leave them alone."""
    folder = tmp_path_factory.mktemp("bystanders")
    started = []
    for name in ("ray", "sglang", "redis-server", "miles"):
        shutil.copy(shutil.which("sleep") or "/bin/sleep", folder / name)
        started.append(subprocess.Popen([str(folder / name), "600"], start_new_session=True))
    yield started
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture
def specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """Write specs extending the shipped GLM-5 ones, with paths in tmp_path; cwd is tmp_path."""
    (tmp_path / "m" / "hardware").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MILES_ROOT", str(FAKE_MILES))
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path / "state"))  # run records: this test's own
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "WANDB_API_KEY", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("RUN_MATRIX_GPUS", "NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        monkeypatch.delenv(name, raising=False)

    def write(name: str, base: str = "rocm/glm5-async", extra: str = "") -> Path:
        path = tmp_path / "m" / "fake" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        paths = (
            f"{{models: {tmp_path}/models, datasets: {tmp_path}/datasets, shared_data: {tmp_path}/shared}}"
        )
        lines = [f"extends: {MATRICES}/{base}.yaml", f"vars: {paths}", "matrix: !delete"]
        lines += ["requires: !delete"] if base.startswith("rocm") else []
        lines += ["retry: {infra: 1, delay_seconds: 0}", extra]
        path.write_text("\n".join(lines) + "\n")
        return path

    return write


def run(cli: Callable[..., Any], *argv: str, address: str | None = None) -> tuple[int, dict[str, Any], str]:
    """run-matrix run in-process with a JSON report; (exit code, report, stderr)."""
    where = ["--ray-address", address] if address else []
    result = cli("run", *argv, *where, "--log-dir", "logs", "--format", "json", "--junit", "junit.xml")
    return result.code, json.loads(result.out) if result.out else {}, result.err


def cells(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cell["id"]: cell for cell in report["cells"]}


def test_two_cells_pass_and_no_secret_is_written(cli, specs, users_cluster, tmp_path, monkeypatch):
    specs("async")
    specs("colocate", base="nv/glm5-colocate")
    monkeypatch.setenv("WANDB_API_KEY", SECRET)  # the fake train checks it arrives as --wandb-key
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    code, report, err = run(cli, "m/fake", address=users_cluster.address)
    assert code == 0, err
    found = cells(report)
    assert [(c["id"], c["status"], c["reason"]) for c in found.values()] == [
        ("fake/async", "passed", ""),
        ("fake/colocate", "passed", ""),
    ]
    checks = [(c["metric"], c["ok"]) for c in found["fake/async"]["checks"]]
    assert checks == [
        ("train/ppo_kl", True),
        ("train/train_rollout_logprob_abs_diff", True),
        ("perf/step_time", True),
    ]
    assert [s["value"] for s in found["fake/async"]["metrics"]["perf/step_time"]] == [26.0, 26.0, 26.0]
    assert [p["status"] for p in found["fake/async"]["prepare"]] == ["ran"] * 5
    assert [p["status"] for p in found["fake/colocate"]["prepare"]] == ["skipped"] * 5  # the same files
    assert report["clusters"] == [{"address": users_cluster.address, "started": False, "pid": None}] * 2
    log = (tmp_path / "logs" / "fake-colocate.log").read_text()
    assert "fake miles train.py: " in log and "wandb: logged in with key ${WANDB_API_KEY}" in log
    written = [tmp_path / "junit.xml", tmp_path / "summary.md", *(tmp_path / "logs").iterdir()]
    for text in [json.dumps(report), err, *(path.read_text() for path in written)]:
        assert SECRET not in text
    assert (tmp_path / "summary.md").read_text().startswith("## run-matrix: 2 passed in ")
    assert users_cluster.alive()


def test_metrics_out_of_bounds_fail_the_cell_and_keep_going_runs_the_rest(cli, specs, users_cluster):
    specs("a-metrics", extra="env: {FAKE_MILES_LOGPROB_DIFF: '0.5'}\nexpect: {train/never: {max: 1}}")
    specs("b-fine")
    code, report, _ = run(cli, "m/fake", "--keep-going", "--skip-prepare", address=users_cluster.address)
    broken, fine = report["cells"]
    assert (code, broken["status"], fine["status"]) == (1, "failed", "passed")
    assert broken["reason"] == (
        "train/train_rollout_logprob_abs_diff is 0.5 at step 0 (and 2 more); expected value <= 0.1 at every "
        "step; train/never was never printed (expected value <= 1 at every step)"
    )
    assert {(p["status"], p["detail"]) for p in broken["prepare"]} == {("skipped", "--skip-prepare")}


def test_a_crash_fails_is_not_retried_and_stops_the_run(cli, specs, users_cluster, tmp_path):
    specs("a-crash", extra="env: {FAKE_MILES_EXIT: '3'}")
    specs("b-fine")
    code, report, _ = run(cli, "m/fake", address=users_cluster.address)
    assert code == 1
    crash, fine = report["cells"]
    assert (crash["status"], crash["reason"]) == (
        "failed",
        "the job exited with code 3: AssertionError: train/ppo_kl must be < 1e-8 at step 0 (fake)",
    )
    assert [a["outcome"] for a in crash["attempts"]] == ["failed"]  # retry.infra is 1: tests are not retried
    assert (fine["status"], fine["reason"]) == (
        "skipped",
        "not run: fake/a-crash failed (--keep-going runs the rest)",
    )
    junit = (tmp_path / "junit.xml").read_text()
    assert 'tests="2" errors="0" failures="1" skipped="1"' in junit


def test_a_timeout_stops_the_job(cli, specs, users_cluster):
    specs("async", extra="env: {FAKE_MILES_SLEEP: '120'}")
    code, report, _ = run(cli, "m/fake/async.yaml", "--timeout", "2", address=users_cluster.address)
    (cell,) = report["cells"]
    assert (code, cell["status"], cell["reason"]) == (1, "failed", "timed out after 2 s; the job was stopped")
    assert users_cluster.status(cell["attempts"][0]["submission_id"]) == "STOPPED"


def test_a_lost_job_is_retried_and_every_attempt_recorded(cli, specs, users_cluster, tmp_path):
    specs("async", extra=f"env: {{FAKE_MILES_LOSE_JOB_ONCE: {tmp_path}/lost}}")
    code, report, _ = run(cli, "m/fake/async.yaml", address=users_cluster.address)
    (cell,) = report["cells"]
    assert (code, cell["status"]) == (0, "passed")
    first, second = cell["attempts"]
    assert (first["outcome"], second["outcome"]) == ("infra", "succeeded")
    assert first["detail"].startswith(
        "Ray lost the job (JOB_SUPERVISOR_ACTOR_DIED): Job supervisor actor died"
    )
    assert first["submission_id"] != second["submission_id"]
    assert first["submission_id"].startswith("fake-async-")


def test_an_unmet_requirement_skips_and_strict_fails(cli, specs):
    requires = (
        "requires: {sg: {kind: package, name: run-matrix-no-such-package}}\nwhy: {requires.sg: NSA kernels}"
    )
    specs("async", base="nv/glm5-colocate", extra=requires)
    code, report, err = run(cli, "m/fake/async.yaml")
    (cell,) = report["cells"]
    assert "run-matrix: 1 skipped in 0 s: nothing ran, every selected cell was skipped (exit 5)\n" in err
    assert (code, cell["status"], report["clusters"], report["ok"]) == (5, "skipped", [], False)  # none ran
    assert cell["reason"] == "requires.sg: run-matrix-no-such-package is not installed (NSA kernels)"
    assert run(cli, "m/fake/async.yaml", "--strict")[0] == 1


def test_a_cell_the_matrix_skips_is_reported_with_its_reason(cli, specs):
    skip = (
        "{match: {fp8_rollout: false}, skip: {reason: no H200 in this lab, issue: 'https://example.com/1'}}"
    )
    path = specs("nv", base="nv/glm5-colocate")
    text = path.read_text().replace(
        "matrix: !delete", f"matrix:\n  axes: {{fp8_rollout: [false]}}\n  adjust: {{broken: {skip}}}"
    )
    path.write_text(text)
    code, report, _ = run(cli, "m/fake/nv.yaml")
    assert (code, report["cells"][0]["status"], report["cells"][0]["reason"]) == (
        5,
        "skipped",
        "skip: no H200 in this lab (https://example.com/1)",
    )


def test_an_unreachable_cluster_is_an_infrastructure_error_after_the_retries(cli, specs):
    specs("async")
    code, report, _ = run(cli, "m/fake/async.yaml", "--no-preflight", address="http://127.0.0.1:9")
    (cell,) = report["cells"]
    assert (code, cell["status"], [a["outcome"] for a in cell["attempts"]]) == (
        1,
        "error",
        ["infra", "infra"],
    )
    assert cell["reason"].startswith("Ray at http://127.0.0.1:9 is unreachable: ")
    assert cell["reason"].endswith(" (2 attempts)")


def test_its_own_head_is_started_and_stopped_and_nothing_else_is_touched(
    cli, specs, users_cluster, bystanders, monkeypatch
):
    specs("async")
    monkeypatch.setenv("RUN_MATRIX_GPUS", "amd:8")  # this machine has none; the head declares 8
    code, report, err = run(cli, "m/fake/async.yaml")
    assert (code, report["cells"][0]["status"]) == (0, "passed"), err
    (head,) = report["clusters"]
    assert head["started"] and head["address"] != users_cluster.address
    assert in_session(head["pid"]) == []  # every process of its head is gone
    assert users_cluster.alive()
    assert [p.poll() for p in bystanders] == [None] * 4


def test_ctrl_c_stops_the_job_writes_the_partial_report_and_exits_130(
    specs, users_cluster, bystanders, tmp_path
):
    specs("async", extra="env: {FAKE_MILES_SLEEP: '120'}")
    argv = [sys.executable, "-c", "from runner.cli import console; console()", "m/fake/async.yaml"]
    argv += ["--ray-address", users_cluster.address, "--log-dir", "logs", "--report", "report.json"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log = tmp_path / "logs" / "fake-async.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and "step 0:" in log.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    (cell,) = json.loads((tmp_path / "report.json").read_text())["cells"]
    assert (cell["status"], cell["reason"]) == ("interrupted", "interrupted (Ctrl-C); the job was stopped")
    assert list(cell["metrics"]["train/ppo_kl"]) == [{"kind": "step", "step": 0, "value": 0.0}]
    assert users_cluster.status(cell["attempts"][0]["submission_id"]) == "STOPPED"
    assert users_cluster.alive()
    assert [p.poll() for p in bystanders] == [None] * 4


def test_dry_run_runs_nothing_and_a_bare_spec_means_run(cli, specs):
    specs("async")
    result = cli("m/fake/async.yaml", "--dry-run", "--no-preflight", "--format", "json")  # the plan alone
    assert result.code == 0, result.err
    (cell,) = json.loads(result.out)["cells"]
    assert (cell["id"], cell["would"]) == ("fake/async", "run")
    assert [s["would"] for s in cell["prepare"]][:2] == ["run", "run"]
    assert cell["job"]["entrypoint"].startswith(f"python3 {FAKE_MILES}/train_async.py --spec ")
    assert not Path("logs").exists()
    nothing = cli("run", "m/fake/async.yaml", "-k", "nv/*")
    assert (nothing.code, nothing.err) == (2, "run-matrix: -k 'nv/*' matches none of 1 cell: fake/async\n")


# the fake checkout's execute_train leaves its root off PYTHONPATH (miles is installed where that holds)
VERIFY = """
miles_version: 31f1ca96
env:
  MILES_SESSION_VERIFY_METRICS_PATH: {path}
  FAKE_MILES_MISMATCHES: '{mismatches}'
  PYTHONPATH: $${{MILES_ROOT}}
verify:
  session-metrics:
    call: miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics
    args: {{metrics_path: {path}, assistant_text_threshold: 0.2}}
"""


def test_verify_runs_the_checkouts_check_after_the_job_and_its_failure_fails_the_cell(
    cli, specs, users_cluster, tmp_path
):
    metrics = tmp_path / "metrics-{}.jsonl"
    specs("a-verified", extra=VERIFY.format(path=metrics.as_posix().format("a"), mismatches=1))
    specs("b-mismatched", extra=VERIFY.format(path=metrics.as_posix().format("b"), mismatches=5))
    code, report, err = run(cli, "m/fake", "--keep-going", "--skip-prepare", address=users_cluster.address)
    verified, mismatched = report["cells"]
    assert (code, verified["status"], verified["reason"]) == (1, "passed", ""), err
    (record,) = verified["verified"]
    assert (record["name"], record["outcome"]) == ("session-metrics", "succeeded")
    assert record["call"] == "miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics"
    log = (tmp_path / "logs" / "fake-a-verified.log").read_text()
    assert log.index("fake miles: training done") < log.index("==> verify session-metrics: ")
    assert "fake check: 10 samples, mismatch rate 0.10" in log
    assert "step 0: {'train/ppo_kl': 99.0}" in log  # logged, but not one of the run's samples:
    assert [s["value"] for s in verified["metrics"]["train/ppo_kl"]] == [0.0, 1e-4, 1e-4]
    assert (mismatched["status"], mismatched["reason"]) == (
        "failed",
        "verify session-metrics (miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics):"
        " the job exited with code 1: AssertionError: assistant_text mismatch rate 0.50 > 0.2",
    )
    assert [a["outcome"] for a in mismatched["attempts"]] == ["succeeded"]  # the training itself passed
    junit = (tmp_path / "junit.xml").read_text()
    assert "assistant_text mismatch rate 0.50 &gt; 0.2" in junit


def test_verify_entries_whose_names_give_one_job_name_are_jobs_of_their_own(
    cli, specs, users_cluster, tmp_path
):
    path = (tmp_path / "metrics.jsonl").as_posix()
    again = "  session metrics:\n    call: miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics\n"
    again += f"    args: {{metrics_path: {path}, assistant_text_threshold: 0.2}}\n"
    specs("twice", extra=VERIFY.format(path=path, mismatches=1) + again)
    dry = cli("run", "m/fake/twice.yaml", "--dry-run")
    shown = [line.split(": python3 -c ")[0] for line in dry.out.splitlines() if line.startswith("  verify ")]
    assert shown == [
        "  verify session-metrics: job fake-twice-<8 hex digits>-verify1-session-metrics",
        "  verify session metrics: job fake-twice-<8 hex digits>-verify2-session-metrics",
    ]
    code, report, _ = run(cli, "m/fake", "--skip-prepare", address=users_cluster.address)
    (cell,) = report["cells"]
    assert (code, cell["status"]) == (0, "passed"), cell["reason"]  # Ray took both ids
    assert [(v["name"], v["outcome"]) for v in cell["verified"]] == [
        ("session-metrics", "succeeded"),
        ("session metrics", "succeeded"),
    ]


def test_verify_does_not_run_when_the_job_failed(cli, specs, users_cluster, tmp_path):
    path = (tmp_path / "never.jsonl").as_posix()
    spec = specs("crash", extra=VERIFY.format(path=path, mismatches=0))
    spec.write_text(spec.read_text().replace("FAKE_MILES_MISMATCHES: '0'", "FAKE_MILES_EXIT: '3'"))
    code, report, _ = run(cli, "m/fake", "--skip-prepare", address=users_cluster.address)
    (cell,) = report["cells"]
    assert (code, cell["status"], cell["verified"]) == (1, "failed", [])
    assert cell["reason"].startswith("the job exited with code 3")


OWN_CHECK = """
env:
  PYTHONPATH: $${{MILES_ROOT}}
verify:
  own-metrics:
    call: tests/e2e/own/checks.py:read_metrics
    args: {{metrics: {path}, at_most: 0.2}}
"""


@pytest.fixture
def own_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake checkout with tests that check their run with functions of their own file."""
    root = tmp_path / "miles"
    shutil.copytree(FAKE_MILES, root)
    shutil.copytree(DATA / "own-checks", root, dirs_exist_ok=True)
    monkeypatch.setenv("MILES_ROOT", str(root))
    return root


def test_a_tests_own_check_runs_from_the_checkout_after_the_job_and_its_failure_fails_the_cell(
    cli, specs, own_checkout, users_cluster, tmp_path
):
    metrics = tmp_path / "metrics-{}.jsonl"
    for side, rate in (("a", 0.1), ("b", 0.5)):
        Path(metrics.as_posix().format(side)).write_text(json.dumps({"mismatch": rate}) + "\n")
    specs("a-own", extra=OWN_CHECK.format(path=metrics.as_posix().format("a")))
    specs("b-own", extra=OWN_CHECK.format(path=metrics.as_posix().format("b")))
    code, report, err = run(cli, "m/fake", "--keep-going", "--skip-prepare", address=users_cluster.address)
    passed, failed = report["cells"]
    assert (code, passed["status"], passed["reason"]) == (1, "passed", ""), err
    (record,) = passed["verified"]
    assert (record["name"], record["call"], record["outcome"]) == (
        "own-metrics",
        "tests/e2e/own/checks.py:read_metrics",
        "succeeded",
    )
    log = (tmp_path / "logs" / "fake-a-own.log").read_text()
    assert "own check: 1 samples, at most 0.10" in log
    assert "the __main__ block ran" not in log
    assert (failed["status"], failed["reason"]) == (
        "failed",
        "verify own-metrics (tests/e2e/own/checks.py:read_metrics): the job exited with code 1: AssertionError:"
        " mismatch rate 0.50 > 0.2",
    )


def test_an_own_check_reading_rays_default_session_is_refused_on_a_head_run_starts(cli, specs, own_checkout):
    gone = "verify:\n  gone:\n    call: tests/e2e/own/test_gone.py:check\n"
    spec = specs("session", extra=gone)
    result = cli("run", "m/fake/session.yaml", "--skip-prepare")
    assert result.code == 2  # run has the checkout ($MILES_ROOT), so rule L16 checks the call there
    assert f"error [L16] verify.gone.call: the checkout at {own_checkout} has no file" in result.err
    spec.write_text(spec.read_text().replace("test_gone.py:check", "test_ray_logs.py:_assert_armed"))
    result = cli("run", "m/fake/session.yaml", "--skip-prepare")
    assert (result.code, result.err.splitlines()[:2]) == (
        3,
        [
            "run-matrix: preflight failed (--no-preflight runs anyway):",
            "  fake/session: verify.gone: _assert_armed() reads /tmp/ray/session_latest/logs/worker-*,"
            " /tmp/ray/session_latest/logs/armed, Ray's default session, and the Ray head run starts for a cell"
            " keeps its session in a private temp dir (run-matrix-ray-*): the check would read another Ray's logs,"
            " or none. Start a head with Ray's default temp dir (`ray start --head`) and run with --ray-address"
            " http://127.0.0.1:8265",
        ],
    )  # the next lines: this machine has no GPUs for the cell


HOOKED = "launch:\n  before_submit: [tests/e2e/own/hooks.py:{hook}]\n"


def test_a_hook_of_the_tests_own_runs_before_the_submission_and_stops_after_the_job(
    cli, specs, own_checkout, users_cluster, tmp_path, monkeypatch
):
    monkeypatch.setenv("OWN_HOOK_OUT", str(tmp_path / "sidecar.pid"))
    specs("hooked", extra=HOOKED.format(hook="start_sidecar"))
    code, report, err = run(cli, "m/fake/hooked.yaml", "--skip-prepare", address=users_cluster.address)
    assert (code, cells(report)["fake/hooked"]["status"]) == (0, "passed"), err
    sidecar = int((tmp_path / "sidecar.pid").read_text())
    assert not alive(sidecar)  # stopped with the hook's process session, after the job
    log = (tmp_path / "logs" / "fake-hooked.log").read_text()
    assert log.index("==> start_sidecar: returned; it stays up") < log.index("fake miles: training done")
    hook_log = (tmp_path / "logs" / "fake-hooked.start_sidecar.log").read_text()
    assert hook_log.startswith(f"own hook: sidecar {sidecar} started\n")


def test_a_hook_that_raises_fails_the_attempt_before_any_job(cli, specs, own_checkout, users_cluster, tmp_path):
    specs("refused", extra=HOOKED.format(hook="refuse_to_start"))
    code, report, err = run(cli, "m/fake/refused.yaml", "--skip-prepare", address=users_cluster.address)
    cell = cells(report)["fake/refused"]
    assert code != 0 and cell["status"] == "error", err
    assert cell["reason"].startswith("refuse_to_start did not return: exited (1);")
    assert cell["reason"].endswith("RuntimeError: the sidecar would not start (2 attempts)")  # retry.infra: 1
    log = (tmp_path / "logs" / "fake-refused.log").read_text()
    assert "fake miles: training" not in log
