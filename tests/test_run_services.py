"""A launch's services (miles' before_ray_job_submit hooks): started unless their port answers,
waited for, stopped with what they started; with the fake mooncake_master of tests/data/fake-bin."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.launch.command import Command
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.redact import Redactor
from runner.run import preflight, preview, services
from runner.run.cluster import free_ports
from runner.run.plan import Options
from runner.run.record import Untracked
from tests.conftest import DATA, alive
from tests.test_model import VALID

pytestmark = pytest.mark.allow_subprocess
ENV = {"PATH": f"{DATA / 'fake-bin'}{os.pathsep}{os.environ['PATH']}"}


def master(port: int, program: str = "mooncake_master") -> Command:
    argv = (program, "--rpc_port", str(port), "--metrics_port", "0")
    return Command(
        "cluster", "mooncake-master", argv, skip_if=f"127.0.0.1:{port} already answers", listens=port
    )


def test_a_service_is_up_for_the_attempt_and_stopped_after(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    said: list[str] = []
    with services.running([master(port)], ENV, tmp_path / "cell.log", Untracked(), said.append, Redactor()):
        assert services.answers(port)
    assert not services.answers(port)
    log = tmp_path / "cell.mooncake-master.log"
    assert said == [f"==> mooncake-master: answers on 127.0.0.1:{port} (its output: {log})"]
    assert log.read_text() == f"mooncake_master listening on 127.0.0.1:{port}\n"


def test_one_that_already_answers_is_left_as_it_is(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as someone_elses:
        port = someone_elses.getsockname()[1]
        said: list[str] = []
        with services.running(
            [master(port, "no-such-program")], ENV, tmp_path / "c.log", Untracked(), said.append, Redactor()
        ):
            pass
        assert said == [
            f"==> mooncake-master: skipped: something already answers on 127.0.0.1:{port}; it is taken to be"
            " the service, as miles' hook takes it, and left as it is"
        ]
        assert services.answers(port)  # never stopped: it is not ours


def test_one_that_exits_or_is_missing_is_an_environment_problem(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    failing = {**ENV, "FAKE_MOONCAKE_FAIL": "cannot bind the metrics port"}
    started = services.running([master(port)], failing, tmp_path / "c.log", Untracked(), print, Redactor())
    with pytest.raises(EnvironmentProblem) as caught, started:
        raise AssertionError("the body must not run")
    assert str(caught.value) == (
        f"mooncake-master did not answer on 127.0.0.1:{port}: exited (1); {tmp_path}/c.mooncake-master.log"
        " ends with:\n  mooncake_master: cannot bind the metrics port"
    )
    missing = services.running([master(port, "no-such-program")], ENV, tmp_path / "c.log", Untracked(), print, Redactor())
    with pytest.raises(EnvironmentProblem) as caught, missing:
        pass
    assert str(caught.value) == "mooncake-master: no-such-program is not installed (not on PATH)"


def planned_with_master(write) -> Planned:
    text = VALID.replace(
        "launch: {script: train.py}", "launch: {script: train.py, before_submit: [mooncake-master]}"
    )
    cell = pipeline.cell(write("spec.yaml", text))
    return Planned(
        cell, render(cell, Context(miles_root=str(DATA / "fake-miles"))), "spec.yaml", "run-matrix run ..."
    )


def test_dry_run_says_what_it_would_start(write) -> None:
    options = Options(DATA / "fake-miles", None, Path("logs"))
    (service,) = preview.preview(planned_with_master(write), options, "run")["services"]
    assert service == {
        "name": "mooncake-master",
        "kind": "service",
        "would": "left as it is: 127.0.0.1:50051 answers now"
        if services.answers(50051)
        else "start, then stop",
        "command": "mooncake_master --rpc_port 50051 --metrics_port 0",
    }


def test_a_job_on_another_cluster_would_not_reach_a_service_started_here(write) -> None:
    each = planned_with_master(write)
    options = Options(DATA / "fake-miles", "http://10.0.0.7:8265", Path("logs"), skip_prepare=True)
    with pytest.raises(EnvironmentProblem) as caught:
        preflight.check([each], options)
    assert (
        "  spec: mooncake-master is started on this machine, and the job runs on the cluster at"
        " http://10.0.0.7:8265: start `mooncake_master --rpc_port 50051 --metrics_port 0` on the cluster's"
        " head and run from there (--ray-address on 127.0.0.1)"
    ) in str(caught.value).splitlines()
    assert services.local("http://127.0.0.1:8265") and services.local("localhost:6379")


@pytest.fixture
def own_checkout(tmp_path: Path) -> Path:
    """The fake checkout with hooks of the test's own (tests/e2e/own/hooks.py)."""
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    shutil.copytree(DATA / "own-checks", root, dirs_exist_ok=True)
    return root


def hooks_of(write, checkout: Path, *hooks: str) -> tuple[Command, ...]:
    entries = ", ".join(hook if hook.startswith("{") else f"tests/e2e/own/hooks.py:{hook}" for hook in hooks)
    text = VALID.replace(
        "launch: {script: train.py}", f"launch: {{script: train.py, before_submit: [{entries}]}}"
    )
    launch = render(pipeline.cell(write("spec.yaml", text)), Context(miles_root=str(checkout)))
    return tuple(c for c in launch.commands if c.phase == "cluster" and c.name != "ray-head")


def test_a_hook_of_the_tests_own_stays_up_with_what_it_started_and_is_stopped_after(
    write, own_checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OWN_HOOK_OUT", str(tmp_path / "sidecar.pid"))
    (hook,) = hooks_of(write, own_checkout, "start_sidecar")
    said: list[str] = []
    with services.running([hook], {}, tmp_path / "cell.log", Untracked(), said.append, Redactor()):
        sidecar = int((tmp_path / "sidecar.pid").read_text())
        assert alive(sidecar)  # up for the job, though the hook has returned
    assert not alive(sidecar)  # stopped with the hook's process session
    log = tmp_path / "cell.start_sidecar.log"
    assert said == [f"==> start_sidecar: returned; it stays up (its output: {log})"]
    assert (
        log.read_text()
        == f"own hook: sidecar {sidecar} started\nrun-matrix: the before_submit hook returned\n"
    )


def test_a_hook_that_raises_is_an_environment_problem_with_its_output(write, own_checkout, tmp_path) -> None:
    (hook,) = hooks_of(write, own_checkout, "refuse_to_start")
    started = services.running([hook], {}, tmp_path / "c.log", Untracked(), print, Redactor())
    with pytest.raises(EnvironmentProblem) as caught, started:
        raise AssertionError("the body must not run")
    message = str(caught.value)
    assert message.startswith(
        f"refuse_to_start did not return: exited (1); {tmp_path}/c.refuse_to_start.log ends with:\n  "
    )
    assert message.endswith("RuntimeError: the sidecar would not start")


def test_a_hook_given_arguments_is_called_with_them(write, own_checkout, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OWN_HOOK_OUT", str(tmp_path / "sidecar.pid"))
    entry = "{call: tests/e2e/own/hooks.py:start_sidecar, args: {label: teacher on GPU 4}}"
    (hook,) = hooks_of(write, own_checkout, entry)
    with services.running([hook], {}, tmp_path / "cell.log", Untracked(), print, Redactor()):
        sidecar = int((tmp_path / "sidecar.pid").read_text())
    assert (
        (tmp_path / "cell.start_sidecar.log")
        .read_text()
        .startswith(f"own hook: teacher on GPU 4 {sidecar} started\n")
    )
    assert not alive(sidecar)


def test_a_retried_attempt_waits_for_its_own_ready_line_not_the_one_before(
    write, own_checkout, tmp_path
) -> None:
    (hook,) = hooks_of(write, own_checkout, "refuse_to_start")
    log = tmp_path / "c.refuse_to_start.log"
    log.write_text("own hook: the first attempt\nrun-matrix: the before_submit hook returned\n")
    started = services.running([hook], {}, tmp_path / "c.log", Untracked(), print, Redactor())
    with pytest.raises(EnvironmentProblem) as caught, started:
        raise AssertionError("the body must not run: the ready line is the first attempt's")
    assert str(caught.value) == (  # the tail is this attempt's: the first one's lines are not quoted
        f"refuse_to_start did not return: exited (1); {log} ends with:\n"
        "  Traceback (most recent call last):\n"
        '    File "<string>", line 1, in <module>\n'
        f'    File "{own_checkout}/tests/e2e/own/hooks.py", line 17, in refuse_to_start\n'
        '      raise RuntimeError("the sidecar would not start")\n'
        "  RuntimeError: the sidecar would not start"
    )


def test_the_ready_line_is_found_after_a_line_longer_than_a_read(tmp_path: Path) -> None:
    program = (
        "import sys; print('x' * 200000 + 'run-matrix: the before_submit hook returned'); print(sys.argv[1])"
    )
    ready = "run-matrix: the before_submit hook returned"
    hook = Command(
        "cluster",
        "flood",
        (sys.executable, "-c", program + "; import time; time.sleep(60)", ready),
        ready=ready,
    )
    said: list[str] = []
    with services.running([hook], {}, tmp_path / "cell.log", Untracked(), said.append, Redactor()):
        pass
    assert said == [f"==> flood: returned; it stays up (its output: {tmp_path / 'cell.flood.log'})"]


def test_dry_run_says_which_hook_it_would_call_with_what(write, own_checkout) -> None:
    entry = "{call: tests/e2e/own/hooks.py:start_sidecar, args: {label: teacher}}"
    text = VALID.replace(
        "launch: {script: train.py}", f"launch: {{script: train.py, before_submit: [{entry}]}}"
    )
    cell = pipeline.cell(write("spec.yaml", text))
    each = Planned(
        cell, render(cell, Context(miles_root=str(own_checkout))), "spec.yaml", "run-matrix run ..."
    )
    found = preview.preview(each, Options(own_checkout, None, Path("logs")), "run")
    (hook,) = found["services"]
    assert (hook["name"], hook["kind"], hook["would"]) == (
        "start_sidecar",
        "hook",
        'call tests/e2e/own/hooks.py:start_sidecar with {"label":"teacher"} from the checkout at'
        f" {own_checkout}, keep it and what it starts up for the job, then stop them",
    )
    assert f"  hook start_sidecar: {hook['would']}" in preview.text([found]).splitlines()


def test_a_hooks_log_never_holds_the_callers_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caller = {"GITHUB_TOKEN": "ghp_secret_value_1", "DB_PASSWORD": "pw-secret-2", "SVC_CREDS": "cred-3-xyz"}
    for name, value in caller.items():
        monkeypatch.setenv(name, value)
    line = 'echo "t=$GITHUB_TOKEN p=$DB_PASSWORD c=$SVC_CREDS"; echo ready; exec sleep 30'
    hook = Command("cluster", "leaky", ("sh", "-c", line), ready="ready")
    with services.running([hook], {}, tmp_path / "cell.log", Untracked(), print, Redactor.of(os.environ)):
        pass
    assert (tmp_path / "cell.leaky.log").read_text() == (
        "t=${GITHUB_TOKEN} p=${DB_PASSWORD} c=${SVC_CREDS}\nready\n"
    )


def test_a_hooks_log_that_is_a_link_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "cell.leaky.log").symlink_to(victim)
    hook = Command("cluster", "leaky", ("sh", "-c", "echo ready; exec sleep 30"), ready="ready")
    started = services.running([hook], {}, tmp_path / "cell.log", Untracked(), print, Redactor())
    with pytest.raises(EnvironmentProblem, match=r"cell.leaky\.log is a link"), started:
        pass
    assert victim.read_text() == "precious"
