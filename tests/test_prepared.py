"""A flag that takes what a prepare call returned (``$${prepared:FUNCTION}``): the form, rules
G12/G13, the rendered launch (JSON; shell, run by bash with the checkout's function) and --dry-run.
The run itself: tests/test_run_prepared.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.launch import programs
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.launch.script import to_shell
from runner.run import preview
from runner.run.plan import Options
from runner.spec.runtime import prepared
from tests.conftest import DATA
from tests.test_model import MINIMAL
from tests.test_steps import python3_first

EXECUTION = "tests/e2e/ft/conftest_ft/execution.py"
FUNCTION = "materialize_cyclic_debug_rollout_data"
STEP = f"""prepare:
  debug_data:
    kind: call
    call: {EXECUTION}:{FUNCTION}
    args: {{count: 3}}
"""
FLAG = f'    load-debug-rollout-data: "$${{prepared:{FUNCTION}}}/{{rollout_id}}.pt"\n'
FORM = "  ==> write $${prepared:FUNCTION} in a flag's value (FUNCTION: the function of a prepare step of kind call)"
ELSEWHERE = (
    "a prepare call's result is filled into the flags of args alone (a value, or an item of a list), when"
    " the job is submitted: nothing fills it here"
)


def spec(write, step: str = STEP, flag: str = FLAG, extra: str = "") -> Path:
    return write("spec.yaml", MINIMAL + step + "args:\n  misc:\n    colocate: true\n" + flag + extra)


def problems(write, **parts: str) -> list[str]:
    cell = pipeline.cell(spec(write, **parts))
    return [str(p) for p in check.run(cell) if p.rule in ("G12", "G13")]


def test_a_flag_taking_a_calls_result_anywhere_in_its_text_has_no_problem(write) -> None:
    assert problems(write) == []
    listed = f'    rollout-data-postfix: ["a", "$${{prepared:{FUNCTION}}}-$${{prepared:{FUNCTION}}}"]\n'
    assert problems(write, flag=FLAG + listed) == []


def test_the_reference_is_matched_never_evaluated() -> None:
    text = "${prepared:f}/${prepared:g_2}/{rollout_id}.pt ${prepared:f}"
    assert prepared.functions(text) == ["f", "g_2"]
    assert prepared.problem(text) is None
    assert prepared.filled(("--x", text, "${HOME}"), {"f": "/a b", "g_2": "$c"}) == (
        "--x",
        "/a b/$c/{rollout_id}.pt /a b",
        "${HOME}",
    )
    assert prepared.for_shell((text,)) == (
        "${RUN_MATRIX_PREPARED_f}/${RUN_MATRIX_PREPARED_g_2}/{rollout_id}.pt ${RUN_MATRIX_PREPARED_f}",
    )
    assert (
        prepared.problem("/${prepared:f") == "'/${prepared:f' holds ${prepared: without the } that closes it"
    )
    assert prepared.functions("${prepared:a.b} ${prepared:}") == []


def test_a_malformed_reference_is_g12(write) -> None:
    flag = '    load-debug-rollout-data: ["$${prepared:a.b}", "/d/$${prepared:}/x", "$${prepared:1f}"]\n'
    no_name = (
        "names no FUNCTION (a plain Python name: letters, digits and _, not starting with a digit, no dots)"
    )
    assert problems(write, flag=flag) == [
        f"spec.yaml:13: error [G12] args.misc.load-debug-rollout-data.0: '${{prepared:a.b}}' {no_name}\n"
        + FORM,
        "spec.yaml:13: error [G12] args.misc.load-debug-rollout-data.1: '/d/${prepared:}/x' holds"
        f" '${{prepared:}}', which {no_name}\n" + FORM,
        f"spec.yaml:13: error [G12] args.misc.load-debug-rollout-data.2: '${{prepared:1f}}' {no_name}\n"
        + FORM,
    ]


def test_a_reference_outside_a_flags_value_is_g12(write) -> None:
    used = f"$${{prepared:{FUNCTION}}}"
    step = STEP.replace("{count: 3}", f'{{count: 3, into: "{used}"}}')
    extra = (
        f'env: {{DEBUG_DATA: "{used}"}}\n'
        f'model: {{type: glm5-744B-A40B_4layer, args: {{num-layers: "{used}"}}}}\n'
        f'verify:\n  data:\n    call: {EXECUTION}:{FUNCTION}\n    args: {{"{used}": 1}}\n'
    )
    hook = f'launch: {{script: train.py, before_submit: [{{call: "{EXECUTION}:as_path", args: {{name: "{used}"}}}}]}}'
    text = spec(write, step=step, extra=extra).read_text()
    text = text.replace("model: {type: glm5-744B-A40B_4layer}\n", "").replace(
        "launch: {script: train.py}", hook
    )
    cell = pipeline.cell(write("spec.yaml", text))
    found = [str(p) for p in check.run(cell) if p.rule in ("G12", "G13")]
    assert found == [  # in the order of the spec's keys
        f"spec.yaml:14: error [G12] model.args.num-layers: {ELSEWHERE}\n" + FORM,
        f"spec.yaml:3: error [G12] launch.before_submit.0.args.name: {ELSEWHERE}\n" + FORM,
        f"spec.yaml:8: error [G12] prepare.debug_data.args.into: {ELSEWHERE}\n" + FORM,
        f"spec.yaml:13: error [G12] env.DEBUG_DATA: {ELSEWHERE}\n" + FORM,
        f"spec.yaml:18: error [G12] verify.data.args.{used}: '{used}' is a"  # a key is not resolved
        " mapping key: only a flag's value takes a prepare call's result\n" + FORM,
    ]


def test_a_reference_to_no_call_of_the_cell_is_g13_with_a_guess(write) -> None:
    flag = FLAG.replace("rollout_data", "rolout_data")
    assert problems(write, flag=flag) == [
        "spec.yaml:13: error [G13] args.misc.load-debug-rollout-data: --load-debug-rollout-data takes the result"
        " of materialize_cyclic_debug_rolout_data, but no prepare step of kind call of the cell calls"
        f" materialize_cyclic_debug_rolout_data (its calls: {FUNCTION}); did you mean {FUNCTION}?\n"
        "  ==> also at spec.yaml:5\n"
        "  ==> name the function of a prepare step of kind call of this cell (call: PATH.py:FUNCTION)"
    ]
    assert problems(write, step="prepare: {dirs: {kind: mkdir, paths: [/tmp/x]}}\n") == [
        "spec.yaml:9: error [G13] args.misc.load-debug-rollout-data: --load-debug-rollout-data takes the result"
        f" of {FUNCTION}, but no prepare step of kind call of the cell calls {FUNCTION} (it has no prepare"
        " step of kind call)\n"
        "  ==> also at spec.yaml:5\n"
        "  ==> name the function of a prepare step of kind call of this cell (call: PATH.py:FUNCTION)"
    ]
    assert problems(write, step="")[0].splitlines()[1:] == [  # no prepare at all: nowhere else to point
        "  ==> name the function of a prepare step of kind call of this cell (call: PATH.py:FUNCTION)"
    ]


def test_two_calls_of_the_function_name_are_ambiguous_g13(write) -> None:
    step = STEP + f"  again: {{kind: call, call: 'tests/e2e/ft/other.py:{FUNCTION}'}}\n"
    assert problems(write, step=step) == [
        "spec.yaml:14: error [G13] args.misc.load-debug-rollout-data: --load-debug-rollout-data takes the result"
        f" of {FUNCTION}, but 2 prepare steps of kind call are functions named {FUNCTION} (prepare.debug_data,"
        " prepare.again): which one's result it takes is ambiguous\n"
        "  ==> also at spec.yaml:6\n"
        "  ==> also at spec.yaml:10\n"
        f"  ==> keep one prepare call of {FUNCTION}, or call the other through a function named apart"
    ]


def planned(write, root: str = "/m", **parts: str) -> Planned:
    cell = pipeline.cell(spec(write, **parts))
    return Planned(cell, render(cell, Context(miles_root=root)), "spec.yaml", "run-matrix run spec.yaml")


def test_the_launch_runs_the_result_program_and_lists_which_flag_takes_it(write) -> None:
    launch = planned(write).launch
    (call, *_) = launch.commands
    variable = f"RUN_MATRIX_PREPARED_{FUNCTION}"
    assert call.argv == (
        "python3",
        "-c",
        programs.PREPARED_PROGRAM,
        f"{EXECUTION}:{FUNCTION}",
        '{"count":3}',
        "/m",
        f"${{RUN_MATRIX_RESULT_FILE_{FUNCTION}}}",
    )
    assert (call.cwd, call.every_time, call.result) == ("/m", True, variable)
    assert launch.to_json()["prepared"] == {
        variable: {
            "step": "debug_data",
            "call": f"{EXECUTION}:{FUNCTION}",
            "function": FUNCTION,
            "reference": f"${{prepared:{FUNCTION}}}",
            "flags": ["--load-debug-rollout-data"],
        }
    }
    assert launch.to_json()["commands"][0]["result"] == variable
    at = launch.train_args.index("--load-debug-rollout-data")
    assert launch.train_args[at + 1] == f"${{prepared:{FUNCTION}}}/{{rollout_id}}.pt"


def test_a_call_no_flag_takes_is_rendered_as_before(write) -> None:
    launch = planned(write, flag="").launch
    (call, *_) = launch.commands
    assert (call.argv[2], len(call.argv), call.result) == (programs.CALL_PROGRAM, 6, "")
    assert launch.prepared == {} and "prepared" not in launch.to_json()
    assert "result" not in launch.to_json()["commands"][0]


def test_dry_run_says_which_flag_takes_which_calls_result(write) -> None:
    for skip, then in ((False, "when the job is submitted"), (True, "but --skip-prepare skips that step: the cell would fail before its job is submitted")):  # fmt: skip
        found = preview.preview(planned(write), Options(Path("/m"), None, Path("logs"), skip_prepare=skip), "run")
        would = f"what prepare step debug_data ({EXECUTION}:{FUNCTION}) returns, in place of ${{prepared:{FUNCTION}}}, {then}"
        assert found["prepared"] == [
            {"flag": "--load-debug-rollout-data", "step": "debug_data", "call": f"{EXECUTION}:{FUNCTION}", "would": would}
        ]  # fmt: skip
        text = preview.text([found]).splitlines()
        assert f"  prepared --load-debug-rollout-data: takes {would}" in text
    (step,) = found["prepare"]
    assert step["would"].endswith("in that folder; what it returns goes to --load-debug-rollout-data")


SCRIPT = f"""# prepare: debug_data (from ${{MILES_ROOT}}; it runs every time: nothing tells that it is done; its result: $RUN_MATRIX_PREPARED_{FUNCTION}, for --load-debug-rollout-data)
RUN_MATRIX_RESULT_FILE_{FUNCTION}=$(mktemp -t run-matrix-prepared-{FUNCTION}.XXXXXX)
PROGRAM || {{ rm -f -- "$RUN_MATRIX_RESULT_FILE_{FUNCTION}"; exit 1; }}
RUN_MATRIX_PREPARED_{FUNCTION}=$(<"$RUN_MATRIX_RESULT_FILE_{FUNCTION}")
rm -f -- "$RUN_MATRIX_RESULT_FILE_{FUNCTION}"
[ -n "$RUN_MATRIX_PREPARED_{FUNCTION}" ] || {{ echo 'run-matrix: prepare step debug_data ({EXECUTION}:{FUNCTION}) left no result for --load-debug-rollout-data' >&2; exit 1; }}
"""  # fmt: skip


@pytest.mark.allow_subprocess  # bash -n of the script
def test_the_script_reads_the_result_into_a_variable_the_flag_takes(write) -> None:
    launch = planned(write, "${MILES_ROOT}").launch
    text = to_shell(launch, "spec.yaml")
    (call, *_) = launch.commands
    assert SCRIPT.replace("PROGRAM", call.shell) in text
    assert f" --load-debug-rollout-data \"${{RUN_MATRIX_PREPARED_{FUNCTION}}}\"'/{{rollout_id}}.pt'" in text
    assert ': "${RUN_MATRIX_RESULT_FILE_' not in text  # the script sets it itself
    assert "${prepared:" not in text.split("# submit: train")[1]
    assert subprocess.run(["bash", "-n"], input=text, text=True, check=False).returncode == 0


HOSTILE = "/a $b `touch pwned` $(touch pwned) \"q\" 'y' \\\\ ${prepared:as_path}/{rollout_id}.pt"


def node(tmp_path: Path) -> dict[str, str]:
    """This machine as a node: the checkout with the test's function, a ``python3`` with pydantic, and
    a ``ray`` that writes the argv of ``ray job submit`` to ``$SUBMITTED``, one word a line."""
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-prepared", root)
    bin_folder = tmp_path / "bin"
    path = python3_first(bin_folder)
    ray = bin_folder / "ray"
    ray.write_text('#!/bin/sh\n[ "$1" = job ] || exit 0\nshift 5\nprintf \'%s\\n\' "$@" >"$SUBMITTED"\n')
    ray.chmod(0o755)
    (tmp_path / "tmp").mkdir()
    return {**os.environ, "PATH": path, "MILES_ROOT": str(root), "TMPDIR": str(tmp_path / "tmp"),
            "NCCL_NVLS_ENABLE": "0", "SUBMITTED": str(tmp_path / "submitted")}  # fmt: skip


@pytest.mark.allow_subprocess  # bash runs the whole script: the call, then a ray that prints the job's argv
def test_bash_runs_the_call_and_the_job_gets_its_result_and_nothing_of_the_text_expanded(write, tmp_path) -> None:  # fmt: skip
    step = f"prepare:\n  folder: {{kind: call, call: '{EXECUTION}:as_path', args: {{name: debug}}}}\n"
    flag = f"    load-debug-rollout-data: {yaml_quoted(HOSTILE)}\n"
    env = node(tmp_path)
    script = tmp_path / "launch.sh"
    script.write_text(to_shell(planned(write, "${MILES_ROOT}", step=step, flag=flag).launch, "spec.yaml"))
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    submitted = (tmp_path / "submitted").read_text().splitlines()
    (folder,) = (tmp_path / "tmp").glob("tmp*/debug")  # what as_path made; the result's file is gone
    taken = submitted[submitted.index("--load-debug-rollout-data") + 1]
    assert taken == HOSTILE.replace("${prepared:as_path}", str(folder))
    assert not (tmp_path / "pwned").exists()  # nothing of the flag's text ran
    assert list((tmp_path / "tmp").iterdir()) == [folder.parent]


def yaml_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar, ``${`` written ``$${`` for the resolver."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("${", "$${") + '"'


@pytest.mark.allow_subprocess
def test_the_script_stops_where_the_call_returns_no_flag_text_and_leaves_no_file(write, tmp_path) -> None:
    step = f"prepare:\n  folder: {{kind: call, call: '{EXECUTION}:returns_none'}}\n"
    flag = "    load-debug-rollout-data: $${prepared:returns_none}/{rollout_id}.pt\n"
    env = node(tmp_path)
    text = to_shell(planned(write, "${MILES_ROOT}", step=step, flag=flag).launch, "spec.yaml")
    done = subprocess.run(
        ["bash", "-c", text], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (1, "materialized nothing\n")
    assert done.stderr == (
        "run-matrix: returns_none() returned NoneType, which is no text: a flag takes a str or os.PathLike (a path)\n"
    )
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "submitted").exists()
