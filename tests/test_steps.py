"""A prepare step of kind ``call`` as render writes it: run-matrix's call program, the test's own
function and its arguments, the checkout's root to load it from and to run in; never skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner import pipeline
from runner.launch import programs
from runner.launch.render import Context, render
from runner.launch.script import to_shell
from tests.conftest import DATA
from tests.test_model import VALID

PREPARED = "tests/e2e/long/test_tiny_0.6B_prepared.py"
STEP = f"""prepare:
  own:
    kind: call
    call: {PREPARED}:prepare
    args: {{path: /tmp/x/ready.txt, text: ready}}
"""


def python3_first(folder: Path) -> str:
    """A PATH whose ``python3`` is this test run's interpreter (with pydantic), as a node's has one."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-prepare", root)
    return root


def test_a_call_is_the_call_program_run_from_the_checkouts_root_every_time(write) -> None:
    cell = pipeline.cell(write("spec.yaml", VALID + STEP))
    for root in ("${MILES_ROOT}", "/root/miles"):
        (command, *_) = render(cell, Context(miles_root=root)).commands
        assert command.argv == (
            "python3",
            "-c",
            programs.CALL_PROGRAM,
            f"{PREPARED}:prepare",
            '{"path":"/tmp/x/ready.txt","text":"ready"}',
            root,
        )
        assert (command.phase, command.name, command.cwd, command.every_time) == (
            "prepare",
            "own",
            root,
            True,
        )
        assert (command.skip_if, command.guard, command.env, command.stdin) == ("", (), {}, "")


def test_its_shell_form_says_it_runs_every_time_and_json_shows_its_folder(write) -> None:
    launch = render(pipeline.cell(write("spec.yaml", VALID + STEP)))
    script = to_shell(launch, "spec.yaml").splitlines()
    at = script.index(
        "# prepare: own (from ${MILES_ROOT}; it runs every time: nothing tells that it is done)"
    )
    assert script[at + 1].startswith('(cd "${MILES_ROOT}" || exit; python3 -c ')
    assert script[at + 1].endswith(
        f" {PREPARED}:prepare" + ' \'{"path":"/tmp/x/ready.txt","text":"ready"}\' "${MILES_ROOT}")'
    )
    assert ': "${MILES_ROOT:?set MILES_ROOT}"' in script
    own, *others = launch.to_json()["commands"]
    assert (own["cwd"], own["every_time"]) == ("${MILES_ROOT}", True)
    assert [c for c in others if "cwd" in c or "every_time" in c] == []  # as they always were


@pytest.mark.allow_subprocess  # bash runs the step's shell form, python3 the test's own function
def test_the_shell_form_calls_the_function_in_the_checkout_without_its_main_block(write, tmp_path) -> None:
    root = checkout(tmp_path)
    out = tmp_path / "out" / "ready.txt"
    out.parent.mkdir()
    step = STEP.replace("/tmp/x/ready.txt", str(out))
    (command, *_) = render(pipeline.cell(write("spec.yaml", VALID + step))).commands
    env = {**os.environ, "MILES_ROOT": str(root), "PATH": python3_first(tmp_path / "bin")}
    done = subprocess.run(["bash", "-c", command.shell], cwd="/", env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert out.read_text() == f"ready in {root}\n"  # from the checkout's root, where miles' CI runs a test
    env["MILES_ROOT"] = str(tmp_path / "gone")
    done = subprocess.run(["bash", "-c", command.shell], cwd="/", env=env, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (
        1,
        f"bash: line 1: cd: {tmp_path}/gone: No such file or directory\n",
    )


def test_its_json_arguments_travel_as_verify_jobs_do(write) -> None:
    step = STEP.replace("text: ready", "text: '$${HF_HOME}'")
    (command, *_) = render(pipeline.cell(write("spec.yaml", VALID + step))).commands
    assert json.loads(command.argv[4]) == {"path": "/tmp/x/ready.txt", "text": "${HF_HOME}"}
    assert "$" not in command.argv[4]  # each travels as \u0024: the shell leaves it alone
