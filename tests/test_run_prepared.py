"""A prepare call whose result a flag takes, for real: the checkout's function (tests/data/own-prepared)
run by its step, every way its result can fail to be a flag's text, ``--skip-prepare`` failing the cell
before its job, and on a local Ray the job launched with the flag filled (miles' FT soak test)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from runner import pipeline
from runner.launch.command import Command
from runner.launch.render import Context, render
from runner.run.prepare import run_step
from schemas.prepare import PrepareStep
from tests.conftest import DATA
from tests.test_model import VALID
from tests.test_run_on_ray import FAKE_MILES, cells, run, specs, users_cluster  # noqa: F401 (fixtures)
from tests.test_steps import python3_first

pytestmark = pytest.mark.allow_subprocess
EXECUTION = "tests/e2e/ft/conftest_ft/execution.py"


def call(write, root: Path, function: str, args: str = "{}") -> tuple[PrepareStep, Command]:
    """The step calling ``function`` whose result ``--load-debug-rollout-data`` takes, and its command."""
    text = VALID.replace("{colocate: true}", f'{{colocate: true, load-debug-rollout-data: "$${{prepared:{function}}}/{{rollout_id}}.pt"}}')  # fmt: skip
    text += f"prepare:\n  data:\n    kind: call\n    call: {EXECUTION}:{function}\n    args: {args}\n"
    cell = pipeline.cell(write("spec.yaml", text))
    (command, *_) = render(cell, Context(miles_root=str(root))).commands
    return cell.spec.prepare["data"], command


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The checkout with the test's own functions, a ``python3`` with pydantic, a ``$TMPDIR`` of its own."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where run makes the result's fresh folder
    return {**os.environ, "PATH": python3_first(tmp_path / "bin")}


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-prepared", root)
    return root


def test_the_step_records_the_path_the_call_returned_and_removes_the_result_file(write, tmp_path, node) -> None:  # fmt: skip
    step, command = call(write, checkout(tmp_path), "materialize_cyclic_debug_rollout_data", "{count: 3}")
    lines: list[str] = []
    record = run_step("data", step, command, node, lines.append)
    (folder,) = (tmp_path / "tmp").iterdir()  # the function's folder; run's fresh one is gone
    assert (record.status, record.result, lines) == ("ran", str(folder), [])
    assert record.detail == f"called {EXECUTION}:materialize_cyclic_debug_rollout_data; it returned {folder}"
    assert sorted(p.name for p in folder.iterdir()) == ["0.pt", "1.pt", "2.pt", "cycle.pt"]
    step, command = call(write, checkout(tmp_path / "again"), "as_path", "{name: debug}")
    record = run_step("data", step, command, node, lines.append)
    assert record.status == "ran" and record.result is not None and record.result.endswith("/debug")  # a Path


SAID = "run-matrix: {function}() returned"
ONE_LINE = "a flag takes its result as one line of text"
FAULTS = [
    ("returns_none", "NoneType, which is no text: a flag takes a str or os.PathLike (a path)"),
    ("returns_count", "int, which is no text: a flag takes a str or os.PathLike (a path)"),
    ("returns_bytes", "bytes, which is no text: a flag takes a str or os.PathLike (a path)"),
    ("returns_empty", f"str '': it is empty; {ONE_LINE}"),
    ("returns_lines", f"str '/tmp/debug\\n/tmp/more': it holds a NUL or a line break; {ONE_LINE}"),
    ("returns_reference", f"str '/tmp/${{HOME}}/debug': it holds ${{, which the job's shell would expand; {ONE_LINE}"),
    ("returns_long", f"str '/{'x' * 76}...': it is 5001 bytes of UTF-8, more than 4096; {ONE_LINE}"),
]  # fmt: skip


@pytest.mark.parametrize(("function", "why"), FAULTS)
def test_a_result_no_flag_can_take_fails_the_step_saying_what_the_function_returned(write, tmp_path, node, function, why) -> None:  # fmt: skip
    step, command = call(write, checkout(tmp_path), function)
    lines: list[str] = []
    record = run_step("data", step, command, node, lines.append)
    said = f"{SAID.format(function=function)} {why}"
    assert (record.status, record.result) == ("failed", None)
    assert record.detail == f"{EXECUTION}:{function} failed (exit code 1): {said}"
    assert lines[-1] == said and list((tmp_path / "tmp").iterdir()) == []


def test_a_call_that_raises_or_leaves_before_its_result_is_written_fails_the_step(write, tmp_path, node) -> None:  # fmt: skip
    step, command = call(write, checkout(tmp_path), "refuse")
    record = run_step("data", step, command, node, lambda line: None)
    assert (record.status, record.result, record.detail) == (
        "failed",
        None,
        f"{EXECUTION}:refuse failed (exit code 1): FileNotFoundError: no debug rollout data under /root/datasets/ft",
    )
    step, command = call(write, checkout(tmp_path / "again"), "leaves")
    record = run_step("data", step, command, node, lambda line: None)
    assert (record.status, record.result, record.detail) == (
        "failed",
        None,
        f"{EXECUTION}:leaves ended without run-matrix's program writing its result (it exited?)",
    )
    assert list((tmp_path / "tmp").iterdir()) == []


def test_skip_prepare_fails_the_cell_before_any_job_saying_why(cli, write, tmp_path, node, monkeypatch) -> None:  # fmt: skip
    root = checkout(tmp_path)
    (root / "train.py").write_text("")
    call(write, root, "materialize_cyclic_debug_rollout_data")  # writes spec.yaml
    for name, value in {"RUN_MATRIX_STATE_DIR": str(tmp_path / "state"), "RUN_MATRIX_GPUS": "nvidia:8", "PATH": node["PATH"]}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    report = tmp_path / "report.json"
    argv = ("run", "spec.yaml", "--skip-prepare", "--miles-root", str(root), "--log-dir", "logs")
    done = cli(*argv, "--report", str(report))
    assert done.code == 1, done.err
    (cell,) = json.loads(report.read_text())["cells"]
    why = (
        "--load-debug-rollout-data takes what prepare step data"
        f" ({EXECUTION}:materialize_cyclic_debug_rollout_data) returns, but --skip-prepare skipped that step:"
        " nothing fills it; run without --skip-prepare"
    )
    assert (cell["status"], cell["reason"]) == ("failed", why)
    assert [(a["outcome"], a["detail"]) for a in cell["attempts"]] == [("failed", why)]
    assert cell["prepare"] == [  # no result where none was returned
        {"name": "data", "kind": "call", "status": "skipped", "detail": "--skip-prepare", "seconds": 0.0}
    ]
    assert json.loads(report.read_text())["clusters"] == []  # no Ray head, no job


FT = """
prepare:
  debug_data:
    kind: call
    call: tests/e2e/ft/conftest_ft/execution.py:materialize_cyclic_debug_rollout_data
    args: {count: 3}
args:
  misc:
    load-debug-rollout-data: "$${prepared:materialize_cyclic_debug_rollout_data}/{rollout_id}.pt"
"""


def test_the_job_gets_the_flag_filled_with_the_path_the_call_returned(cli, specs, users_cluster, tmp_path, monkeypatch) -> None:  # noqa: F811  # fmt: skip
    root = tmp_path / "miles"
    shutil.copytree(FAKE_MILES, root)
    shutil.copytree(DATA / "own-prepared", root, dirs_exist_ok=True)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("MILES_ROOT", str(root))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    specs("ft", extra=FT)
    code, report, err = run(cli, "m/fake/ft.yaml", address=users_cluster.address)
    cell = cells(report)["fake/ft"]
    assert (code, cell["status"], cell["reason"]) == (0, "passed", ""), err
    (folder,) = (tmp_path / "tmp").glob("debug-rollout-data-*")
    (step,) = [p for p in cell["prepare"] if p["name"] == "debug_data"]
    assert (step["status"], step["result"]) == ("ran", str(folder))
    assert all("result" not in p for p in cell["prepare"] if p["name"] != "debug_data")
    log = (tmp_path / "logs" / "fake-ft.log").read_text()
    taken = f"{folder}/{{rollout_id}}.pt"
    said = f"==> prepared --load-debug-rollout-data: {folder} (what prepare step debug_data returned)\n"
    assert log.index(said) < log.index("==> attempt 1: job ")
    assert f"fake miles: --load-debug-rollout-data {taken}: loaded {folder}/0.pt\n" in log  # the job's argv
