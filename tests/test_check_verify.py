"""Rule L16: a ``verify:`` entry naming a test's own function (``PATH.py:function``) is checked
against the checkout's file, read by ``ast`` (never imported); without a checkout it is a warning."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from runner import check, pipeline
from tests.conftest import DATA

MAIN = Path(__file__).parents[1] / "matrices" / "nv" / "glm5-main-ci.yaml"
DUMPED = "tests/e2e/own/test_tiny_0.6B_dumped.py"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-checks", root)
    return root


def l16(write, verify: str, root: Path | None) -> list[str]:
    cell = pipeline.cell(write("spec.yaml", f"extends: {MAIN}\nverify:\n  own:\n{verify}"))
    cell = dataclasses.replace(cell, miles_root=root)
    return [str(p) for p in check.run(cell) if p.rule in ("L15", "L16")]


def test_a_function_the_file_defines_with_its_parameters_passes(write, checkout) -> None:
    given = f"    call: {DUMPED}:verify\n    args: {{dump_dir: /tmp/d, samples: 3}}\n"
    assert l16(write, given, checkout) == []
    assert (
        l16(write, f"    call: {DUMPED}:verify\n    args: {{dump_dir: /tmp/d}}\n", checkout) == []
    )  # a default


def test_without_a_checkout_it_says_it_could_not_be_checked(write) -> None:
    assert l16(write, f"    call: {DUMPED}:verify\n", None) == [
        f"spec.yaml:3: warning [L16] verify.own.call: {DUMPED}:verify is a function of the checkout's own,"
        " which could not be checked without one\n"
        "  ==> give the checkout (--miles-root DIR or $MILES_ROOT) to check that the file defines it with these"
        " parameters; run needs the checkout and checks it there"
    ]


def test_parameters_it_does_not_take_or_leaves_out_are_an_error(write, checkout) -> None:
    assert l16(write, f"    call: {DUMPED}:verify\n    args: {{dump: /tmp/d}}\n", checkout) == [
        "spec.yaml:3: error [L16] verify.own.args: verify() takes dump_dir, samples; no parameter dump; dump_dir"
        " not given\n"
        f"  ==> {DUMPED}:verify is called with exactly these keyword arguments after the job"
    ]


HINT = "  ==> name a top-level function of a file of the checkout, the path relative to its root"


def test_a_missing_file_or_function_is_an_error_that_names_what_is_there(write, checkout) -> None:
    assert l16(write, "    call: tests/e2e/own/test_gone.py:verify\n", checkout) == [
        f"spec.yaml:3: error [L16] verify.own.call: the checkout at {checkout} has no file"
        f" tests/e2e/own/test_gone.py\n{HINT}"
    ]
    assert l16(write, f"    call: {DUMPED}:verfy\n", checkout) == [
        f"spec.yaml:3: error [L16] verify.own.call: {DUMPED} defines no top-level function verfy (did you mean"
        f" verify? it defines: execute, verify)\n{HINT}"
    ]
    assert l16(write, "    call: tests/e2e/own.py:verify\n", checkout) == [
        f"spec.yaml:3: error [L16] verify.own.call: the checkout at {checkout} has no file tests/e2e/own.py\n{HINT}"
    ]


def test_a_function_whose_name_the_module_binds_to_something_else_after_its_def_is_an_error(write, checkout) -> None:  # fmt: skip
    # test_beside_rebound.py ends with `verify = print`: the program loads the module and would call
    # print(**args), a check that passes whatever it is given
    rebound = "tests/e2e/own/test_beside_rebound.py"
    assert l16(write, f"    call: {rebound}:verify\n    args: {{dump_dir: /tmp/d, injections: 1}}\n", checkout) == [
        f"spec.yaml:3: error [L16] verify.own.call: {rebound} binds verify to something else at line 24, after"
        f" its def: the call would get what the module holds last\n{HINT}"
    ]
    assert l16(write, f"    call: {rebound}:main\n", checkout) == []  # defined once


def test_a_link_out_of_the_checkout_or_a_file_that_does_not_parse_is_an_error(
    write, checkout, tmp_path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def verify():\n    pass\n")
    (checkout / "tests" / "linked.py").symlink_to(outside)
    assert l16(write, "    call: tests/linked.py:verify\n", checkout) == [
        f"spec.yaml:3: error [L16] verify.own.call: tests/linked.py leads out of the checkout at {checkout}\n{HINT}"
    ]
    (checkout / "tests" / "broken.py").write_text("def verify(:\n")
    (found,) = l16(write, "    call: tests/broken.py:verify\n", checkout)
    assert found.startswith(
        f"spec.yaml:3: error [L16] verify.own.call: tests/broken.py in the checkout at {checkout} cannot be"
        " parsed: SyntaxError: "
    )
    (checkout / "tests" / "folder.py").mkdir()
    assert l16(write, "    call: tests/folder.py:verify\n", checkout) == [
        f"spec.yaml:3: error [L16] verify.own.call: tests/folder.py in the checkout at {checkout} is not a"
        f" file\n{HINT}"
    ]


def test_a_listed_check_is_l15s_and_an_own_one_is_never_l15s(write, checkout) -> None:
    session = "miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics"
    given = f"    call: {session}\n    args: {{metrics_path: /m, assistant_text_threshold: 0.2}}\n"
    assert l16(write, given, None) == []
    assert l16(write, given, checkout) == []


def hook_problems(write, hooks: str, root: Path | None) -> list[str]:
    text = f"extends: {MAIN}\nlaunch:\n  before_submit: [{hooks}]\n"
    cell = dataclasses.replace(pipeline.cell(write("spec.yaml", text)), miles_root=root)
    return [str(p) for p in check.run(cell) if p.rule == "L16"]


HOOKS = "tests/e2e/own/hooks.py"


def test_a_hook_of_the_test_s_is_checked_in_the_checkout_as_a_function_taking_nothing(
    write, checkout
) -> None:
    assert hook_problems(write, f"mooncake-master, {HOOKS}:start_sidecar", checkout) == []
    assert hook_problems(write, f"{HOOKS}:start_sidecr", checkout) == [
        f"spec.yaml:3: error [L16] launch.before_submit.0: {HOOKS} defines no top-level function start_sidecr"
        " (did you mean start_sidecar? it defines: refuse_to_start, start_sidecar)\n" + HINT
    ]
    with_parameter = "tests/e2e/own/test_hooked_with_parameter.py:_start_teacher"
    assert hook_problems(write, with_parameter, checkout) == [
        "spec.yaml:3: error [L16] launch.before_submit.0: _start_teacher() takes gpu; gpu not given\n"
        f"  ==> {with_parameter} is called with no arguments between `ray start` and the submission"
    ]
    assert hook_problems(write, f"{HOOKS}:start_sidecar", None) == [
        f"spec.yaml:3: warning [L16] launch.before_submit.0: {HOOKS}:start_sidecar is a function of the"
        " checkout's own, which could not be checked without one\n"
        "  ==> give the checkout (--miles-root DIR or $MILES_ROOT) to check that the file defines it with these"
        " parameters; run needs the checkout and checks it there"
    ]


PREPARED = "tests/e2e/long/test_tiny_0.6B_prepared.py"


def prepare_problems(write, step: str, root: Path | None) -> list[str]:
    text = f"extends: {MAIN}\nprepare:\n  own:\n    kind: call\n{step}"
    cell = dataclasses.replace(pipeline.cell(write("spec.yaml", text)), miles_root=root)
    return [str(p) for p in check.run(cell) if p.rule == "L16"]


def test_a_prepare_call_is_checked_in_the_checkout_with_its_arguments(write, tmp_path) -> None:
    root = tmp_path / "prepared"
    shutil.copytree(DATA / "own-prepare", root)
    assert prepare_problems(write, f"    call: {PREPARED}:prepare\n    args: {{path: /tmp/x}}\n", root) == []
    assert prepare_problems(write, f"    call: {PREPARED}:prepar\n", root) == [
        f"spec.yaml:3: error [L16] prepare.own.call: {PREPARED} defines no top-level function prepar (did you"
        " mean prepare? it defines: prepare, refuse, refuse_login)\n" + HINT
    ]
    assert prepare_problems(write, f"    call: {PREPARED}:prepare\n    args: {{dir: /tmp/x}}\n", root) == [
        "spec.yaml:3: error [L16] prepare.own.args: prepare() takes path, text; no parameter dir; path not given\n"
        f"  ==> {PREPARED}:prepare is called with exactly these keyword arguments as a prepare step, on this"
        " machine before the cell's Ray head starts"
    ]
    assert prepare_problems(write, f"    call: {PREPARED}:prepare\n", root) == [
        "spec.yaml:3: error [L16] prepare.own.args: prepare() takes path, text; path not given\n"
        f"  ==> {PREPARED}:prepare is called with no arguments as a prepare step, on this machine before the"
        " cell's Ray head starts"
    ]
    assert prepare_problems(write, f"    call: {PREPARED}:refuse\n", None) == [
        f"spec.yaml:3: warning [L16] prepare.own.call: {PREPARED}:refuse is a function of the checkout's own,"
        " which could not be checked without one\n"
        "  ==> give the checkout (--miles-root DIR or $MILES_ROOT) to check that the file defines it with these"
        " parameters; run needs the checkout and checks it there"
    ]
