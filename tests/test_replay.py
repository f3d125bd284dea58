"""A check of what a test runs after its launches, in the function that launched them (``verify:``
with ``launched_by``, miles' router test): its model, rule L16 against the checkout's file, the
command render writes, and that program run for real against a checkout, its launches doing nothing."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.errors import SpecError
from runner.launch import programs
from runner.launch.render import Context, render
from tests.conftest import DATA

MAIN = Path(__file__).parents[1] / "matrices" / "nv" / "glm5-main-ci.yaml"
REPLAYED = "tests/e2e/own/test_replayed.py"


def spec(write, verify: str) -> Path:
    return write("spec.yaml", f"extends: {MAIN}\nverify:\n  again:\n{verify}")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    shutil.copytree(DATA / "own-checks", root, dirs_exist_ok=True)
    return root


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("    call: miles.x.compare\n    launched_by: [_run]\n", "launched_by needs a function a test of"),
        (f"    call: {REPLAYED}:execute\n    launched_by: [a.b]\n", "'a.b' is no Python name"),
        (f"    call: {REPLAYED}:execute\n    launched_by: [class]\n", "'class' is no Python name"),
        (f"    call: {REPLAYED}:execute\n    launched_by: [_run, _run]\n", "_run named twice"),
        (f"    call: {REPLAYED}:execute\n    launched_by: [execute]\n", "execute is the function called"),
    ],
)
def test_launched_by_names_other_functions_of_the_tests_own_file(write, given, said) -> None:
    with pytest.raises(SpecError) as caught:
        pipeline.cell(spec(write, given))
    assert said in str(caught.value)
    assert "spec.yaml:" in str(caught.value) and "verify.again" in str(caught.value)


def l16(write, verify: str, root: Path) -> list[str]:
    cell = dataclasses.replace(pipeline.cell(spec(write, verify)), miles_root=root)
    return [str(p) for p in check.run(cell) if p.rule == "L16"]


def test_l16_checks_the_functions_it_leaves_out_in_the_file(write, checkout) -> None:
    given = f"    call: {REPLAYED}:execute\n    args: {{family: tiny}}\n    launched_by: [NAME]\n"
    assert l16(write, given.replace("NAME", "_run"), checkout) == []
    assert l16(
        write, given.replace("NAME", "launch"), checkout
    ) == [  # imported: a name of the module, but unused
        "spec.yaml:6: error [L16] verify.again.launched_by: execute() never"
        " names launch: doing nothing in its place leaves its launches to run\n  ==> name the functions by"
        " which the called function launched, as its body calls them"
    ]
    (problem,) = l16(write, given.replace("NAME", "_ran"), checkout)
    assert "test_replayed.py has no top-level function _ran (it has launch, _run, execute)" in problem


def test_render_runs_the_replay_program_with_the_functions_to_leave_out(write) -> None:
    given = f"    call: {REPLAYED}:execute\n    args: {{family: tiny}}\n    launched_by: [_run]\n"
    launch = render(pipeline.cell(spec(write, given)), Context(miles_root="/root/miles"))
    (verify,) = [c for c in launch.commands if c.phase == "verify"]
    at = verify.argv.index("--") + 1
    assert verify.argv[at:] == (
        "python3",
        "-c",
        programs.REPLAY_PROGRAM,
        f"{REPLAYED}:execute",
        '{"family":"tiny"}',
        "/root/miles",
        '["_run"]',
    )


def replayed(checkout: Path, names: list[str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", programs.REPLAY_PROGRAM, f"{REPLAYED}:execute", '{"family": "tiny"}']
    return subprocess.run(
        [*argv, str(checkout), json.dumps(names)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.allow_subprocess
def test_the_function_runs_again_with_its_launches_doing_nothing(checkout, tmp_path) -> None:
    dumps = Path("/tmp/own-replay")  # where the fixture's launches write; the cells before wrote it
    shutil.rmtree(dumps, ignore_errors=True)
    try:
        for variant, text in (("left", "same"), ("right", "same")):
            (dumps / variant).mkdir(parents=True)
            (dumps / variant / "summary.txt").write_text(text)
        done = replayed(checkout, ["_run"])
        assert done.returncode == 0, done.stderr  # _run() doing nothing: no launch, the dumps compared
        (dumps / "right" / "summary.txt").write_text("other")
        done = replayed(checkout, ["_run"])
        assert done.returncode == 1
        assert "AssertionError: tiny: the two runs differ" in done.stderr  # the test's own check, failing
        done = replayed(checkout, ["_ran"])
        assert done.returncode == 1 and "AttributeError" in done.stderr and "_ran" in done.stderr
    finally:
        shutil.rmtree(dumps, ignore_errors=True)
