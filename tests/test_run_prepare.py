from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.launch.command import Command
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.results.outcome import PrepareRecord
from runner.run import preview
from runner.run.plan import Options
from runner.run.prepare import run_step, skip_reason
from schemas.prepare import PrepareStep
from tests.conftest import DATA
from tests.test_model import VALID
from tests.test_steps import checkout, python3_first

FAKE_MILES = DATA / "fake-miles"
FAKE_BIN = DATA / "fake-bin"


def spec(tmp_path: Path) -> str:
    models = tmp_path / "models"
    return (
        VALID
        + f"""
prepare:
  dirs: {{kind: mkdir, paths: ["{models}", "{tmp_path}/datasets"]}}
  model: {{kind: hf-download, repo: Pinaster/GLM-5_4layer, local_dir: "{models}/GLM-5_4layer"}}
  dataset:
    kind: hf-download
    repo_type: dataset
    repo: zhuzilin/dapo-math-17k
    local_dir: "{tmp_path}/datasets/dapo-math-17k"
  patch:
    kind: patch-hf-config
    config: "{models}/GLM-5_4layer/config.json"
    unless: {{model_type: deepseek_v32}}
    set: {{model_type: deepseek_v32}}
    copy_rope_theta: true
  convert:
    kind: convert-torch-dist
    hf_checkpoint: "{models}/GLM-5_4layer"
    save: "{models}/GLM-5_4layer_torch_dist"
  fp8:
    kind: convert-fp8
    python: python3
    model_dir: "{models}/GLM-5_4layer"
    save_dir: "{models}/GLM-5_4layer_fp8"
"""
    )


def run_all(write, tmp_path: Path) -> list[PrepareRecord]:
    cell = pipeline.cell(write("spec.yaml", spec(tmp_path)))
    launch = render(cell, Context(miles_root=str(FAKE_MILES)))
    commands = {c.name: c for c in launch.commands}
    env = {**os.environ, "PATH": f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}"}
    output: list[str] = []
    records = [run_step(n, s, commands[n], env, output.append) for n, s in cell.spec.prepare.items()]
    return [PrepareRecord(r.name, r.kind, r.status, r.detail) for r in records]  # without timings


@pytest.mark.allow_subprocess
def test_every_kind_runs_then_skips(write, tmp_path):
    models = tmp_path / "models"
    first = run_all(write, tmp_path)
    assert [(r.name, r.status) for r in first] == [
        ("dirs", "ran"),
        ("model", "ran"),
        ("dataset", "ran"),
        ("patch", "ran"),
        ("convert", "ran"),
        ("fp8", "ran"),
    ]
    assert first[0].detail == f"created {models}, {tmp_path}/datasets"
    assert first[1].detail == f"downloaded Pinaster/GLM-5_4layer to {models}/GLM-5_4layer"
    assert first[4].detail == f"converted {models}/GLM-5_4layer to {models}/GLM-5_4layer_torch_dist"
    assert json.loads((models / "GLM-5_4layer" / "config.json").read_text()) == {
        "model_type": "deepseek_v32",
        "num_hidden_layers": 4,
        "rope_parameters": {"rope_theta": 1000000},
        "rope_theta": 1000000,
    }
    assert (models / "GLM-5_4layer_torch_dist" / "latest_checkpointed_iteration.txt").read_text() == "release"
    assert run_all(write, tmp_path) == [
        PrepareRecord("dirs", "mkdir", "skipped", "every directory exists"),
        PrepareRecord("model", "hf-download", "skipped", f"{models}/GLM-5_4layer exists"),
        PrepareRecord("dataset", "hf-download", "skipped", f"{tmp_path}/datasets/dapo-math-17k exists"),
        PrepareRecord(
            "patch", "patch-hf-config", "skipped", f"{models}/GLM-5_4layer/config.json is already patched"
        ),
        PrepareRecord(
            "convert",
            "convert-torch-dist",
            "skipped",
            f"{models}/GLM-5_4layer_torch_dist/latest_checkpointed_iteration.txt says release",
        ),
        PrepareRecord("fp8", "convert-fp8", "skipped", f"{models}/GLM-5_4layer_fp8 exists"),
    ]


def test_skip_conditions_read_the_disk(write, tmp_path):
    cell = pipeline.cell(write("spec.yaml", spec(tmp_path)))
    steps = cell.spec.prepare
    assert skip_reason(steps["patch"]) == f"{tmp_path}/models/GLM-5_4layer/config.json does not exist"
    assert skip_reason(steps["convert"]) is None
    marker = tmp_path / "models" / "GLM-5_4layer_torch_dist" / "latest_checkpointed_iteration.txt"
    marker.parent.mkdir(parents=True)
    marker.write_text("20")  # a training checkpoint, not the converted release
    assert skip_reason(steps["convert"]) is None


def test_a_remove_step_runs_every_time_and_removes_a_link_not_its_target(write, tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "weights").write_text("x")
    models = tmp_path / "models"
    (models / "G-NVFP4" / "shard").mkdir(parents=True)
    (models / "note.txt").write_text("old")
    (models / "link").symlink_to(kept)
    paths = [f"{models}/G-NVFP4", f"{models}/note.txt", f"{models}/link", f"{models}/never-made"]
    cell = pipeline.cell(write("spec.yaml", VALID + f"prepare:\n  clean: {{kind: remove, paths: {json.dumps(paths)}}}\n"))
    step = cell.spec.prepare["clean"]
    command = render(cell).commands[0]
    for _ in range(2):  # never skipped: it is what makes the conversions after it run again
        assert skip_reason(step) is None
        record = run_step("clean", step, command, {}, print)
        assert (record.status, record.detail) == ("ran", "removed " + ", ".join(paths))
    assert sorted(p.name for p in models.iterdir()) == []
    assert (kept / "weights").read_text() == "x"


@pytest.mark.allow_subprocess
def test_a_steps_own_env_is_filled_from_the_callers_as_its_shell_form_is(write, tmp_path):
    step = (
        f"{{kind: convert-torch-dist, hf_checkpoint: /m, save: '{tmp_path}/t',"
        " megatron_path: '$${TE_ROOT}:/root/Megatron-LM'}"
    )
    cell = pipeline.cell(write("spec.yaml", VALID + f"prepare:\n  convert: {step}\n"))
    command = render(cell, Context(miles_root=str(FAKE_MILES))).commands[0]
    env = {"PATH": f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}", "TE_ROOT": "/opt/te"}
    lines: list[str] = []
    record = run_step("convert", cell.spec.prepare["convert"], command, env, lines.append)
    assert record.status == "ran", record.detail
    assert "PYTHONPATH=/opt/te:/root/Megatron-LM" in lines


def test_a_cast_to_bf16_is_done_when_its_index_exists_as_the_helper_says(write, tmp_path):
    out = tmp_path / "models" / "D-bf16"
    step = f"{{kind: cast-fp8-bf16, model_dir: /m, save_dir: '{out}'}}"
    cell = pipeline.cell(write("spec.yaml", VALID + f"prepare:\n  bf16: {step}\n"))
    out.mkdir(parents=True)  # a cast cut short leaves the folder without its index
    assert skip_reason(cell.spec.prepare["bf16"]) is None
    (out / "model.safetensors.index.json").write_text("{}")
    assert skip_reason(cell.spec.prepare["bf16"]) == f"{out}/model.safetensors.index.json exists"


@pytest.mark.allow_subprocess
def test_a_failing_or_missing_program_is_a_failed_step(write, tmp_path):
    cell = pipeline.cell(write("spec.yaml", spec(tmp_path)))
    launch = render(cell, Context(miles_root=str(FAKE_MILES)))
    command = next(c for c in launch.commands if c.name == "model")
    lines: list[str] = []
    no_hf = run_step("model", cell.spec.prepare["model"], command, {"PATH": str(tmp_path)}, lines.append)
    assert (no_hf.status, no_hf.detail) == ("failed", "hf is not installed (not on PATH)")
    (tmp_path / "hf").write_text("#!/bin/sh\necho 'no network' >&2\nexit 4\n")
    (tmp_path / "hf").chmod(0o755)
    failed = run_step("model", cell.spec.prepare["model"], command, {"PATH": str(tmp_path)}, lines.append)
    assert (failed.status, failed.detail) == ("failed", "hf exited with code 4 (the log has its output)")
    assert lines == ["no network"]


@pytest.mark.allow_subprocess  # bash runs the shell form
def test_a_written_file_is_written_on_every_run_and_its_shell_text_is_exact(write, tmp_path):
    """write-file holds a file the test wrote itself (a SGLang config); its text may hold the heredoc's
    own delimiter, which the shell form then steps around."""
    target = tmp_path / "configs" / "sglang.yaml"
    text = "sglang:\n  - name: default\nRUN_MATRIX_PROGRAM\n'quoted' $NOT_EXPANDED\n"
    step = json.dumps({"kind": "write-file", "path": str(target), "text": text})
    cell = pipeline.cell(write("spec.yaml", VALID + f"prepare:\n  file: {step}\n"))
    (command,) = [c for c in render(cell).commands if c.name == "file"]
    assert command.argv == ("cp", "/dev/stdin", str(target)) and command.stdin == text
    for _ in range(2):  # never skipped: a stale copy is never trusted
        record = run_step("file", cell.spec.prepare["file"], command, os.environ, lambda line: None)
        assert (record.status, record.detail) == ("ran", f"wrote {target}")
        assert target.read_text() == text
        target.write_text("stale")
    target.unlink()
    subprocess.run(["bash", "-c", command.shell], check=True)
    assert target.read_text() == text


PREPARED = "tests/e2e/long/test_tiny_0.6B_prepared.py"


def own_call(write, root: Path, function: str, args: str = "{}") -> tuple[PrepareStep, Command]:
    text = VALID + f"prepare:\n  own:\n    kind: call\n    call: {PREPARED}:{function}\n    args: {args}\n"
    cell = pipeline.cell(write("spec.yaml", text))
    (command, *_) = render(cell, Context(miles_root=str(root))).commands
    return cell.spec.prepare["own"], command


@pytest.mark.allow_subprocess
def test_a_call_runs_the_tests_own_function_from_the_checkouts_root_every_time(write, tmp_path):
    root = checkout(tmp_path)
    out = tmp_path / "ready.txt"
    step, command = own_call(write, root, "prepare", f"{{path: '{out}', text: ready}}")
    env = {**os.environ, "PATH": python3_first(tmp_path / "bin")}
    for _ in range(2):  # nothing says a test's own preparation is done: it runs again
        assert skip_reason(step) is None
        lines: list[str] = []
        record = run_step("own", step, command, env, lines.append)
        assert (record.name, record.kind, record.status) == ("own", "call", "ran")
        assert record.detail == f"called {PREPARED}:prepare"
        assert (out.read_text(), lines) == (f"ready in {root}\n", [])
        out.unlink()


@pytest.mark.allow_subprocess
def test_a_call_that_raises_fails_the_step_with_its_last_line(write, tmp_path):
    step, command = own_call(write, checkout(tmp_path), "refuse")
    lines: list[str] = []
    env = {**os.environ, "PATH": python3_first(tmp_path / "bin")}
    record = run_step("own", step, command, env, lines.append)
    assert (record.status, record.detail) == (
        "failed",
        f"{PREPARED}:refuse failed (exit code 1): RuntimeError: uv venv failed: no python3.11",
    )
    assert (lines[0], lines[1], lines[-1]) == (
        "making the venv",
        "Traceback (most recent call last):",
        "RuntimeError: uv venv failed: no python3.11",
    )  # the whole traceback goes to the cell's log


@pytest.mark.allow_subprocess
def test_a_call_without_its_checkout_or_with_an_unset_reference_does_not_run(write, tmp_path):
    step, command = own_call(write, tmp_path / "gone", "prepare", "{path: /tmp/x}")
    env = {**os.environ, "PATH": python3_first(tmp_path / "bin")}
    record = run_step("own", step, command, env, print)
    assert (record.status, record.detail) == ("failed", f"cannot run it from {tmp_path}/gone: no such folder")
    step, command = own_call(write, checkout(tmp_path), "prepare", "{path: '$${RUN_DIR}/x'}")
    with pytest.raises(EnvironmentProblem) as caught:
        run_step("own", step, command, {"PATH": env["PATH"]}, print)
    assert (
        str(caught.value) == "prepare step own's args refers to ${RUN_DIR}, which is not set: export RUN_DIR"
    )


def test_dry_run_names_the_call_its_arguments_and_the_checkout(write, tmp_path):
    root = checkout(tmp_path)
    text = VALID + f"prepare:\n  own: {{kind: call, call: '{PREPARED}:prepare', args: {{path: /tmp/x}}}}\n"
    cell = pipeline.cell(write("spec.yaml", text))
    planned = Planned(cell, render(cell, Context(miles_root=str(root))), "spec.yaml", "run-matrix run ...")
    found = preview.preview(planned, Options(root, None, Path("logs")), "run")
    (own,) = found["prepare"]
    assert (own["name"], own["kind"]) == ("own", "call")
    assert own["would"] == (
        f'run: call {PREPARED}:prepare with {{"path":"/tmp/x"}} from the checkout at {root}, in that folder'
        " (it runs every time)"
    )
    assert f"  prepare own: {own['would']}" in preview.text([found]).splitlines()  # not run-matrix's program
    skipped = preview.preview(planned, Options(root, None, Path("logs"), skip_prepare=True), "run")
    assert skipped["prepare"][0]["would"] == (
        f'skip: --skip-prepare: call {PREPARED}:prepare with {{"path":"/tmp/x"}} from the checkout at {root},'
        " in that folder"
    )


@pytest.mark.allow_subprocess
def test_a_run_whose_call_fails_records_its_error_redacted_and_submits_nothing(
    cli, write, tmp_path, monkeypatch
):
    root = checkout(tmp_path)
    (root / "train.py").write_text("")
    text = VALID + f"prepare:\n  own: {{kind: call, call: '{PREPARED}:refuse_login'}}\n"
    spec = write("spec.yaml", text)
    for name, value in {
        "RUN_MATRIX_STATE_DIR": str(tmp_path / "state"),
        "RUN_MATRIX_GPUS": "nvidia:8",
        "HF_TOKEN": "hf_not_for_the_report",
        "PATH": python3_first(tmp_path / "bin"),
    }.items():
        monkeypatch.setenv(name, value)
    logs, report = tmp_path / "logs", tmp_path / "report.json"
    done = cli("run", str(spec), "--miles-root", str(root), "--log-dir", str(logs), "--report", str(report))
    assert done.code == 1, done.err
    (cell,) = json.loads(report.read_text())["cells"]
    error = "PermissionError: hf refused the token ${HF_TOKEN}"
    assert cell["prepare"] == [
        {
            "name": "own",
            "kind": "call",
            "status": "failed",
            "detail": f"{PREPARED}:refuse_login failed (exit code 1): {error}",
            "seconds": cell["prepare"][0]["seconds"],
        }
    ]
    assert cell["attempts"] == []  # no Ray head, no job
    (log,) = logs.glob("*.log")
    assert error in log.read_text().splitlines()
    assert "hf_not_for_the_report" not in log.read_text() + report.read_text() + done.err
