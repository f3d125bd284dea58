"""A launch's services (miles' before_ray_job_submit hooks): started unless their port answers,
waited for, stopped with what they started; with the fake mooncake_master of tests/data/fake-bin."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from runner.errors import EnvironmentProblem
from runner.render import Command
from runner.run import services
from runner.run.cluster import free_ports
from runner.run.record import Untracked
from tests.conftest import DATA

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
    with services.running([master(port)], ENV, tmp_path / "cell.log", Untracked(), said.append):
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
            [master(port, "no-such-program")], ENV, tmp_path / "c.log", Untracked(), said.append
        ):
            pass
        assert said == [f"==> mooncake-master: skipped, 127.0.0.1:{port} already answers (left as it is)"]
        assert services.answers(port)  # never stopped: it is not ours


def test_one_that_exits_or_is_missing_is_an_environment_problem(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    failing = {**ENV, "FAKE_MOONCAKE_FAIL": "cannot bind the metrics port"}
    started = services.running([master(port)], failing, tmp_path / "c.log", Untracked(), print)
    with pytest.raises(EnvironmentProblem) as caught, started:
        raise AssertionError("the body must not run")
    assert str(caught.value) == (
        f"mooncake-master did not answer on 127.0.0.1:{port}: exited (1); {tmp_path}/c.mooncake-master.log"
        " ends with:\n  mooncake_master: cannot bind the metrics port"
    )
    missing = services.running([master(port, "no-such-program")], ENV, tmp_path / "c.log", Untracked(), print)
    with pytest.raises(EnvironmentProblem) as caught, missing:
        pass
    assert str(caught.value) == "mooncake-master: no-such-program is not installed (not on PATH)"
