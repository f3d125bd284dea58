"""run --dry-run (runner/run/dry_run.py): the plan, then the verdict the run would give, with its exit
code; no probe of the job env runs. (The fake checkout's execute_train is observed in the sandbox, as
render and run observe it: these tests may start that.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.run.plan import Options
from runner.run.setup import Setup
from tests.conftest import DATA
from tests.test_model import MINIMAL, VALID

pytestmark = pytest.mark.allow_subprocess
FAKE_MILES = str(DATA / "fake-miles")
UNSET = "RUN_MATRIX_TEST_NEVER_SET"
# as the run says it: the job's python3 cannot import the fake checkout's parser (it has none)
UNPARSED = "miles' parser not run: python3 cannot import miles (ModuleNotFoundError: No module named 'miles.utils.arguments')"
NOT_RUN = f"run-matrix: {UNPARSED}\n"


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: Callable[[str, str], Path]) -> Any:
    """A node with 8 NVIDIA GPUs (as $RUN_MATRIX_GPUS says) and the fake checkout; ``write`` in cwd."""
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RUN_MATRIX_GPUS", "nvidia:8")
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "MILES_ROOT", "GITHUB_STEP_SUMMARY", UNSET):
        monkeypatch.delenv(name, raising=False)
    return write


def dry(cli: Callable[..., Any], *argv: str) -> Any:
    return cli("run", "spec.yaml", "--dry-run", "--miles-root", FAKE_MILES, *argv)


def header(out: str) -> str:
    """What the cell's first line says it would do."""
    return out.splitlines()[0].split(": would ", 1)[1]


def test_a_cell_the_machine_can_run_would_run(cli, machine) -> None:
    machine("spec.yaml", VALID)
    done = dry(cli)
    assert (done.code, header(done.out)) == (0, "run")
    assert "  env NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE}\n" in done.out  # decided at submission, not here
    assert done.out.endswith(NOT_RUN + "verdict: exit 0 if the jobs pass: 1 cell would run, 0 skipped\n")


def test_a_dry_run_leaves_the_probes_to_the_submission(machine) -> None:
    cell = pipeline.cell(machine("spec.yaml", VALID))
    launch = render(cell, Context(miles_root=FAKE_MILES))
    each = Planned(cell, replace(launch, probes={"NCCL_NVLS_ENABLE": "exit 3"}), "spec.yaml", "")
    options = Options(
        Path(FAKE_MILES), None, Path("logs"), {"RUN_MATRIX_GPUS": "nvidia:8"}, miles_check=False
    )
    with pytest.raises(EnvironmentProblem) as caught:
        Setup.of([each], options)
    assert str(caught.value) == "the probe for NCCL_NVLS_ENABLE failed (exit 3): "
    setup = Setup.of([each], replace(options, dry_run=True))
    assert setup.envs["spec"]["NCCL_NVLS_ENABLE"] == "${NCCL_NVLS_ENABLE}"


def test_a_machine_that_cannot_run_it_is_exit_3_as_the_run_is(cli, machine, monkeypatch) -> None:
    machine("spec.yaml", VALID)
    monkeypatch.setenv("RUN_MATRIX_GPUS", "none")
    ran = cli("run", "spec.yaml", "--miles-root", FAKE_MILES, "--log-dir", "logs")
    assert ran.code == 3, ran.err
    done = dry(cli)
    assert (done.code, header(done.out)) == (
        3,
        "not start: the run stops before its first cell (see the verdict)",
    )
    assert done.out.endswith(
        "\nverdict: exit 3: preflight failed (--no-preflight runs anyway):\n"
        "  spec: needs 8 NVIDIA GPUs (h200); this node has no GPUs ($RUN_MATRIX_GPUS)\n"
    )


def test_no_checkout_is_exit_3(cli, machine) -> None:
    machine("spec.yaml", VALID)
    done = cli("run", "spec.yaml", "--dry-run")
    assert done.code == 3
    assert done.out.endswith(
        "verdict: exit 3: preflight failed (--no-preflight runs anyway):\n"
        "  no miles checkout: pass --miles-root DIR or set MILES_ROOT\n"
    )


def test_a_secret_the_job_needs_and_nobody_set_is_exit_3(cli, machine, monkeypatch) -> None:
    machine("spec.yaml", MINIMAL + f"args:\n  misc: {{colocate: true, save: '$${{{UNSET}}}/ckpt'}}\n")
    done = dry(cli)
    assert (done.code, done.out.splitlines()[-1]) == (
        3,
        f"verdict: exit 3: the job's command line refers to ${{{UNSET}}}, which is not set: export {UNSET}",
    )
    monkeypatch.setenv(UNSET, "/ckpts")
    assert dry(cli).code == 0


def test_every_cell_skipped_is_exit_5_as_the_run_is(cli, machine) -> None:
    machine("spec.yaml", VALID + f"requires:\n  token: {{kind: env, name: {UNSET}}}\n")
    ran = cli("run", "spec.yaml", "--miles-root", FAKE_MILES, "--log-dir", "logs")
    assert ran.code == 5, ran.err
    done = dry(cli)
    assert (done.code, header(done.out)) == (5, f"skip: requires.token: ${UNSET} is not set")
    assert done.out.endswith("\nverdict: exit 5: nothing would run, every selected cell is skipped\n")
    strict = dry(cli, "--strict")
    assert (strict.code, strict.out.splitlines()[-1]) == (
        1,
        "verdict: exit 1: --strict fails the run on a skip, and 1 cell would be skipped",
    )


def test_no_preflight_is_a_plan_only_and_exit_0(cli, machine) -> None:
    machine("spec.yaml", VALID + f"requires:\n  token: {{kind: env, name: {UNSET}}}\n")
    done = cli("run", "spec.yaml", "--dry-run", "--no-preflight")  # no checkout either
    assert (done.code, header(done.out)) == (0, f"skip: requires.token: ${UNSET} is not set")
    assert done.out.endswith("\nverdict: exit 0: a plan only (--no-preflight): nothing was checked\n")


def test_the_verdict_is_in_the_json(cli, machine) -> None:
    machine("spec.yaml", VALID)
    found = json.loads(dry(cli, "--format", "json").out)
    assert [c["would"] for c in found["cells"]] == ["run"]
    assert {k: v for k, v in found.items() if k != "cells"} == {
        "exit_code": 0,
        "verdict": "exit 0 if the jobs pass: 1 cell would run, 0 skipped",
        "notes": [UNPARSED],
    }


def test_an_empty_selection_is_exit_0(cli, machine, tmp_path) -> None:
    machine("spec.yaml", VALID)
    (tmp_path / "cells.json").write_text("[]")
    done = cli("run", "spec.yaml", "--cells", "cells.json", "--dry-run", "--miles-root", FAKE_MILES)
    assert (done.code, done.out) == (0, "\nverdict: exit 0: no cell is selected\n")
