"""A hook's state read by a verify argument (``$${hook:FUNCTION.ATTRIBUTE}``) and a hook's ``stop:``:
the form, rules G10/G11, the rendered launch (JSON, shell run by bash with the checkout's hook) and
--dry-run. The run itself: tests/test_run_hooks.py."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.errors import SpecError
from runner.launch import programs
from runner.launch.command import stop_shell
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.launch.script import to_shell
from runner.run import preview
from runner.run.plan import Options
from tests.conftest import DATA
from tests.test_model import MINIMAL

INJECTOR = "tests/e2e/own/injector.py"
HOOK = f"""
  before_submit:
    - call: {INJECTOR}:spawn_counter
      args: {{out: /tmp/x/ticks}}
      stop: {{call: stop_and_join, args: {{timeout_seconds: 5}}}}
"""
SOAK = """
verify:
  soak:
    call: tests/e2e/own/injector.py:assert_count
    args: {ticks: "$${hook:spawn_counter.ticks}", out: /tmp/x/ticks}
"""


def spec(write, hook: str = HOOK, verify: str = SOAK, extra: str = "") -> Path:
    text = MINIMAL.replace("launch: {script: train.py}", "launch:\n  script: train.py" + hook)
    return write("spec.yaml", text + "args:\n  misc: {colocate: true}\n" + extra + verify)


def problems(write, **parts: str) -> list[str]:
    cell = pipeline.cell(spec(write, **parts))
    return [str(p) for p in check.run(cell) if p.rule in ("G10", "G11")]


def test_a_hook_whose_state_is_read_has_no_problem(write) -> None:
    assert problems(write) == []


def test_the_stop_method_is_a_public_plain_name(write) -> None:
    for method in ("injector.stop", "_stop"):
        with pytest.raises(SpecError) as caught:
            pipeline.cell(spec(write, hook=HOOK.replace("call: stop_and_join", f"call: {method}")))
        assert str(caught.value).splitlines()[1] == (  # the first: the entry is no plain string either
            f"spec.yaml:6: error [type] launch.before_submit.stop.call: {method!r} is no public method name:"
            " a plain name (letters, digits, _), no dots, not starting with _ (the method of what the hook"
            " returned, as stop_and_join)"
        )


FORM = "  ==> write the whole value as $${hook:FUNCTION.ATTRIBUTE} (FUNCTION a launch.before_submit hook's)"


def test_a_reference_inside_text_a_key_or_malformed_is_g10(write) -> None:
    verify = SOAK.replace(
        "out: /tmp/x/ticks}",
        'out: "/tmp/$${hook:spawn_counter.ticks}", more: [{"$${hook:spawn_counter.ticks}": 1},'
        ' "$${hook:spawn_counter._ticks}"]}',
    )
    assert problems(write, verify=verify) == [
        "spec.yaml:17: error [G10] verify.soak.args.out: '/tmp/${hook:spawn_counter.ticks}' holds a hook"
        " reference inside other text\n" + FORM,
        "spec.yaml:17: error [G10] verify.soak.args.more.0.$${hook:spawn_counter.ticks}:"
        " '$${hook:spawn_counter.ticks}' is a mapping key: only a value reads a hook's state\n" + FORM,
        "spec.yaml:17: error [G10] verify.soak.args.more.1: '${hook:spawn_counter._ticks}' names no"
        " FUNCTION.ATTRIBUTE (both plain names; the attribute public: no dots, not starting with _)\n" + FORM,
    ]


def test_a_reference_outside_verify_arguments_is_g10(write) -> None:
    extra = 'env: {TICKS: "$${hook:spawn_counter.ticks}"}\n'
    hook = HOOK.replace("{out: /tmp/x/ticks}", '{out: "$${hook:spawn_counter.ticks}"}')
    before = "a hook's state is read by verify arguments only, once the job has ended; here it is used before the job, where the hook has no state to read yet"
    assert problems(write, hook=hook, extra=extra) == [
        f"spec.yaml:6: error [G10] launch.before_submit.0.args.out: {before}\n" + FORM,
        f"spec.yaml:13: error [G10] env.TICKS: {before}\n" + FORM,
    ]


def test_a_reference_to_no_hook_of_the_cell_is_g11_with_a_guess(write) -> None:
    assert problems(write, verify=SOAK.replace("spawn_counter.ticks", "spawn_countr.ticks")) == [
        "spec.yaml:17: error [G11] verify.soak.args.ticks: verify.soak reads spawn_countr.ticks, but"
        " launch.before_submit has no hook spawn_countr (its hooks: spawn_counter); did you mean spawn_counter?\n"
        "  ==> also at spec.yaml:6\n"
        "  ==> name the function of a hook of this cell's launch.before_submit (PATH.py:FUNCTION)"
    ]
    assert problems(write, hook="\n  before_submit: []\n") == [
        "spec.yaml:14: error [G11] verify.soak.args.ticks: verify.soak reads spawn_counter.ticks, but"
        " launch.before_submit has no hook spawn_counter (it has no hooks)\n"
        "  ==> also at spec.yaml:6\n"
        "  ==> name the function of a hook of this cell's launch.before_submit (PATH.py:FUNCTION)"
    ]


def test_two_hooks_of_the_read_function_name_are_ambiguous_g11(write) -> None:
    hook = HOOK + "    - tests/e2e/other.py:spawn_counter\n"
    assert problems(write, hook=hook) == [
        "spec.yaml:18: error [G11] verify.soak.args.ticks: verify.soak reads spawn_counter.ticks, but 2 hooks"
        " of launch.before_submit are functions named spawn_counter: which one's state it reads is ambiguous\n"
        "  ==> also at spec.yaml:6\n"
        "  ==> keep one hook named spawn_counter, or call the other through a function named apart"
    ]


def planned(write, root: str = "/m", **parts: str) -> Planned:
    cell = pipeline.cell(spec(write, **parts))
    return Planned(cell, render(cell, Context(miles_root=root)), "spec.yaml", "run-matrix run spec.yaml")


def test_the_launch_runs_the_report_program_and_lists_what_verify_reads(write) -> None:
    launch = planned(write).launch
    (hook,) = [c for c in launch.commands if c.name == "spawn_counter"]
    asked = '{"stop":{"call":"stop_and_join","args":{"timeout_seconds":5}},"read":["ticks"]}'
    assert hook.argv == (
        "python3",
        "-c",
        programs.HOOK_REPORT_PROGRAM,
        f"{INJECTOR}:spawn_counter",
        '{"out":"/tmp/x/ticks"}',
        "/m",
        asked,
    )
    assert (hook.ready, hook.report, hook.state) == (
        programs.HOOK_READY,
        "run-matrix: the before_submit hook reported:",
        ("ticks",),
    )
    assert launch.to_json()["hook_reads"] == {
        "soak": [
            {
                "key": "verify.soak.args.ticks",
                "hook": "spawn_counter",
                "attribute": "ticks",
                "reference": "${hook:spawn_counter.ticks}",
            }
        ]
    }
    (verify,) = [c for c in launch.commands if c.phase == "verify"]
    assert '{"ticks":"\\u0024{hook:spawn_counter.ticks}","out":"/tmp/x/ticks"}' in verify.argv


def test_a_hook_with_neither_stop_nor_read_state_is_rendered_as_before(write) -> None:
    launch = planned(
        write,
        hook=HOOK.replace("      stop: {call: stop_and_join, args: {timeout_seconds: 5}}\n", ""),
        verify="",
    ).launch
    (hook,) = [c for c in launch.commands if c.name == "spawn_counter"]
    assert (hook.argv[2], len(hook.argv), hook.report, hook.state) == (programs.HOOK_PROGRAM, 6, "", ())
    assert launch.hook_reads == {}
    assert "stop: spawn_counter" not in to_shell(launch, "spec.yaml")


def test_stop_alone_reports_no_state(write) -> None:
    launch = planned(write, verify="").launch
    (hook,) = [c for c in launch.commands if c.name == "spawn_counter"]
    assert (hook.argv[-1], hook.state) == (
        '{"stop":{"call":"stop_and_join","args":{"timeout_seconds":5}},"read":[]}',
        (),
    )


def test_dry_run_says_which_hooks_state_each_verify_reads(write) -> None:
    found = preview.preview(planned(write), Options(Path("/m"), None, Path("logs")), "run")
    (verify,) = found["verify"]
    assert verify["hook_state"] == ["spawn_counter.ticks"]
    (hook,) = found["services"]
    assert hook["would"] == (
        f'call {INJECTOR}:spawn_counter with {{"out":"/tmp/x/ticks"}} from the checkout at /m, keep it and'
        ' what it starts up for the job, then call its stop_and_join({"timeout_seconds": 5}), report ticks,'
        " stop them"
    )
    text = preview.text([found]).splitlines()
    assert any(
        line.startswith("  verify soak (reads spawn_counter.ticks, reported once the job has ended): job ")
        for line in text
    )


@pytest.mark.allow_subprocess  # bash runs the hook's lines, its stop and the fill as the script would
def test_the_script_stops_the_hook_reads_its_report_and_fills_the_verify_arguments(write, tmp_path) -> None:
    ticks = tmp_path / "ticks"
    launch = planned(write, "${MILES_ROOT}", hook=HOOK.replace("/tmp/x/ticks", str(ticks))).launch
    (hook,) = [c for c in launch.commands if c.name == "spawn_counter"]
    script = to_shell(launch, "spec.yaml")
    fill = next(line for line in script.splitlines() if line.startswith("RUN_MATRIX_VERIFY_ARGS_soak="))
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-checks", root)
    node = {**os.environ, "MILES_ROOT": str(root), "TMPDIR": str(tmp_path)}
    lines = "\n".join(
        [hook.shell, "sleep 0.3", stop_shell(hook), fill, 'echo "$RUN_MATRIX_VERIFY_ARGS_soak"']
    )
    assert stop_shell(hook) in script and fill in script
    bash = subprocess.Popen(["bash", "-c", lines.replace("python3", sys.executable)], env=node, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    out, err = bash.communicate(timeout=60)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(bash.pid, signal.SIGKILL)
    assert (bash.returncode, err) == (0, "")
    wrote = int(ticks.read_text())
    assert wrote > 0 and out == f'{{"ticks":{wrote},"out":"/tmp/x/ticks"}}\n'
    failing = lines.replace(
        '{"call":"stop_and_join","args":{"timeout_seconds":5}}', '{"call":"refuse","args":{}}'
    )
    bash = subprocess.run(["bash", "-c", failing.replace("python3", sys.executable)], env=node, text=True,
                          capture_output=True, timeout=60, start_new_session=True)  # fmt: skip
    assert (bash.returncode, bash.stdout) == (1, "")
    assert bash.stderr == (
        'spawn_counter could not report: {"fault": "refuse() raised RuntimeError: the injector would not stop"}\n'
    )
    dying = lines.replace('{"call":"stop_and_join","args":{"timeout_seconds":5}}', '{"call":"die","args":{}}')
    bash = subprocess.run(["bash", "-c", dying.replace("python3", sys.executable)], env=node, text=True,
                          capture_output=True, timeout=60, start_new_session=True)  # fmt: skip
    (log, *_) = sorted(
        tmp_path.glob("run-matrix-spawn_counter.*/log"), key=lambda p: p.stat().st_mtime, reverse=True
    )
    assert (bash.returncode, bash.stdout) == (1, "")
    assert (
        bash.stderr
        == f"spawn_counter did not report once asked to stop (it ended, or 120 s passed); its output: {log}\n"
    )
    # a line like the report that the hook's own code prints (boast), or a stop's output left mid-line
    # (mumble): the script reads the one report line, the one holding the token it gave the hook
    for stop in ("boast", "mumble"):
        odd = lines.replace('{"call":"stop_and_join","args":{"timeout_seconds":5}}', f'{{"call":"{stop}","args":{{}}}}')
        bash = subprocess.run(["bash", "-c", odd.replace("python3", sys.executable)], env=node, text=True,
                              capture_output=True, timeout=60, start_new_session=True)  # fmt: skip
        assert (bash.returncode, bash.stderr) == (0, "")
        assert json.loads(bash.stdout)["ticks"] < 999999


THREE = [f"{INJECTOR}:spawn_counter", "tests/e2e/own/other.py:spawn_counter", "tests/e2e/own/other.py:spawn_counter_1"]  # fmt: skip


def three_hooks(write, outs: list[Path]) -> list:
    """The commands of three hooks that report: two of the function name spawn_counter (named
    spawn_counter-0 and spawn_counter-1 after their places), and one of spawn_counter_1."""
    entries = ", ".join(
        f"{{call: {call}, args: {{out: {out}}}, stop: {{call: stop_and_join, args: {{timeout_seconds: 5}}}}}}"
        for call, out in zip(THREE, outs, strict=True)
    )
    launch = render(pipeline.cell(spec(write, f"\n  before_submit: [{entries}]\n", "")), Context(miles_root="${MILES_ROOT}"))  # fmt: skip
    hooked = [c for c in launch.commands if c.report]
    assert [c.name for c in hooked] == ["spawn_counter-0", "spawn_counter-1", "spawn_counter_1"]
    return hooked


def test_hooks_whose_names_differ_only_in_what_a_shell_variable_cannot_hold_have_variables_of_their_own(write, tmp_path) -> None:  # fmt: skip
    # spawn_counter-1 and spawn_counter_1 shared every variable of the script (its FIFO, log, pid,
    # token, report): one hook was asked to stop twice, and the other never
    hooked = three_hooks(write, [tmp_path / f"ticks-{n}" for n in range(3)])
    stops = [set(re.findall(r"RUN_MATRIX_STOP_\w+", c.shell + stop_shell(c))) for c in hooked]
    assert all(len(found) == 1 for found in stops)
    assert len(set.union(*stops)) == 3
    assert stops[0] == {"RUN_MATRIX_STOP_spawn_counter_0_" + hashlib.sha256(b"spawn_counter-0").hexdigest()[:8]}
    assert stops[2] == {"RUN_MATRIX_STOP_spawn_counter_1"}  # a name that can be one stays as it is


@pytest.mark.allow_subprocess  # bash runs the three hooks and their stops as the script would
def test_each_of_several_hooks_that_report_is_stopped_by_the_script(write, tmp_path) -> None:
    # bash gave each later hook the FIFOs of the hooks before it: the first never saw its stdin end,
    # and the script waited for its report in vain
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-checks", root)
    other = (root / INJECTOR).read_text() + "\n\ndef spawn_counter_1(out):\n    return Counting(out, 0.02)\n"
    (root / "tests/e2e/own/other.py").write_text(other)
    outs = [tmp_path / f"ticks-{n}" for n in range(3)]
    hooked = three_hooks(write, outs)
    lines = "\n".join(["set -euo pipefail", *(c.shell for c in hooked), "sleep 0.3", *map(stop_shell, hooked)])
    node = {**os.environ, "MILES_ROOT": str(root), "TMPDIR": str(tmp_path)}
    bash = subprocess.Popen(["bash", "-c", lines.replace("python3", sys.executable)], env=node, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        _, err = bash.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(bash.pid, signal.SIGKILL)
    assert (bash.returncode, err) == (0, "")
    assert all(int(out.read_text()) > 0 for out in outs)  # each hook's stop ran


@pytest.mark.allow_subprocess
def test_run_fills_verify_arguments_as_the_scripts_fill_program_does() -> None:
    args = {"ticks": "${hook:spawn_counter.ticks}", "more": ["$HOME", {"k": "${hook:spawn_counter.ticks}"}]}
    argv = ("python3", "-c", "PROGRAM", "CALL", programs.call_arguments(args), "/m")
    reported = {"spawn_counter": {"ticks": [3, "x"]}}
    filled = programs.filled_argv(argv, args, reported)
    assert json.loads(filled[4]) == {"ticks": [3, "x"], "more": ["$HOME", {"k": [3, "x"]}]}
    shown = subprocess.run(  # the script's way, the same text
        [sys.executable, "-c", programs.FILL_PROGRAM, argv[4], "spawn_counter", json.dumps({"state": reported["spawn_counter"]})],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert shown.stdout == filled[4] + "\n"
