"""A hook that reports, for real: the fake checkout's counting hook (tests/e2e/own/injector.py) asked
to stop once the job has ended, its report read from its log, every way it can fail to report; then
on a local Ray, the verify job given the count the hook reported (miles' fault-injection soak test)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.launch.command import Command
from runner.launch.programs import HOOK_READY, HOOK_REPORTED
from runner.launch.render import Context, render
from runner.redact import Redactor
from runner.run import services
from runner.run.record import Untracked
from tests.test_model import VALID
from tests.test_run_on_ray import cells, own_checkout, run, specs, users_cluster  # noqa: F401 (fixtures)

pytestmark = pytest.mark.allow_subprocess
HOOK = "{{call: tests/e2e/own/injector.py:spawn_counter, args: {{out: {out}}}, stop: {{call: {stop}}}}}"
READS = 'verify:\n  soak:\n    call: tests/e2e/own/injector.py:assert_count\n    args: {{ticks: "$${{hook:spawn_counter.{attribute}}}", out: {out}}}\n'


def counter(write, root: Path, out: Path, stop: str = "stop_and_join, args: {timeout_seconds: 5}", attribute: str = "ticks") -> Command:  # fmt: skip
    hook = HOOK.format(out=out, stop=stop)
    text = VALID.replace(
        "launch: {script: train.py}", f"launch: {{script: train.py, before_submit: [{hook}]}}"
    )
    launch = render(pipeline.cell(write("spec.yaml", text + READS.format(attribute=attribute, out=out))), Context(miles_root=str(root)))  # fmt: skip
    (hook_command,) = [c for c in launch.commands if c.name == "spawn_counter"]
    return hook_command


def reported(command: Command, log: Path, job_succeeded: bool = True, within: float = 30) -> tuple[object, list[str]]:  # fmt: skip
    said: list[str] = []
    with services.running([command], {}, log, Untracked(), said.append, Redactor()) as up:
        found = up.reports(job_succeeded, within)
    return found, said


def test_the_hook_stops_and_reports_the_state_its_stop_left(write, own_checkout, tmp_path) -> None:  # noqa: F811
    out = tmp_path / "ticks"
    found, said = reported(counter(write, own_checkout, out), tmp_path / "cell.log")
    ticks = int(out.read_text())
    assert ticks > 0 and found == {"spawn_counter": {"ticks": ticks}}
    assert said[1:] == [f'==> spawn_counter: stopped after the job; it reported {{"ticks": {ticks}}}']
    log = (tmp_path / "cell.spawn_counter.log").read_text()
    token = re.fullmatch(rf"(?s).*\n\n{HOOK_REPORTED} ([0-9a-f]{{32}}) .*", log)
    assert token, log
    assert log == (
        f"{HOOK_READY}\nown injector: stopped after {ticks} ticks\n\n{HOOK_REPORTED} {token[1]} "
        f'{{"state": {{"ticks": {ticks}}}}}\n'
    )


def test_a_stop_that_leaves_its_output_mid_line_still_reports(write, own_checkout, tmp_path) -> None:  # noqa: F811
    # the report starts a line of its own: it was read as part of the stop's unended line, and lost
    found, _ = reported(counter(write, own_checkout, tmp_path / "ticks", "mumble"), tmp_path / "cell.log")
    assert list(found) == ["spawn_counter"] and found["spawn_counter"]["ticks"] != 999999


def test_a_line_like_the_report_the_hooks_own_code_prints_is_not_its_report(write, own_checkout, tmp_path) -> None:  # noqa: F811  # fmt: skip
    # boast() prints run-matrix's report line with a count of 999999 (from its stop and from a thread
    # of its own): without the token it was read as the report
    found, _ = reported(counter(write, own_checkout, tmp_path / "ticks", "boast"), tmp_path / "cell.log")
    (ticks,) = found["spawn_counter"].values()
    assert isinstance(ticks, int) and ticks < 999999
    assert (tmp_path / "cell.spawn_counter.log").read_text().count(HOOK_REPORTED) == 3


JOIN = "stop_and_join, args: {timeout_seconds: 5}"
FAULTS = [
    ("refuse", "ticks", "refuse() raised RuntimeError: the injector would not stop"),
    (JOIN, "nope", "the hook returned Counting, which has no attribute nope"),
    (JOIN, "unreadable", "Counting.unreadable is no JSON value: Object of type set is not JSON serializable"),
    ("missing", "ticks", "the hook returned Counting, which has no method missing"),
]


@pytest.mark.parametrize(("stop", "attribute", "why"), FAULTS)
def test_a_hook_that_cannot_report_says_why_naming_the_hook_and_attribute(write, own_checkout, tmp_path, stop, attribute, why) -> None:  # noqa: F811  # fmt: skip
    command = counter(write, own_checkout, tmp_path / "ticks", stop, attribute)
    with pytest.raises(EnvironmentProblem) as caught:
        reported(command, tmp_path / "cell.log")
    assert (
        str(caught.value)
        == f"no report of spawn_counter's {attribute} once asked to stop after the job: {why}"
    )


def test_a_hook_that_dies_before_reporting_is_an_environment_problem_with_its_output(write, own_checkout, tmp_path) -> None:  # noqa: F811  # fmt: skip
    command = counter(write, own_checkout, tmp_path / "ticks", "die")
    with pytest.raises(EnvironmentProblem) as caught:
        reported(command, tmp_path / "cell.log")
    assert str(caught.value) == (
        "no report of spawn_counter's ticks once asked to stop after the job: spawn_counter exited (7);"
        f" {tmp_path}/cell.spawn_counter.log ends with:\n  {HOOK_READY}"
    )


def test_a_report_that_never_comes_times_out(write, own_checkout, tmp_path) -> None:  # noqa: F811
    command = counter(write, own_checkout, tmp_path / "ticks", "hang")
    with pytest.raises(EnvironmentProblem) as caught:
        reported(command, tmp_path / "cell.log", within=1)
    assert str(caught.value) == (
        "no report of spawn_counter's ticks once asked to stop after the job: 1 s passed;"
        f" {tmp_path}/cell.spawn_counter.log ends with:\n  {HOOK_READY}"
    )


def printing(report: str) -> Command:
    """A hook program of its own that prints ``report`` as its report line once its stdin ends."""
    program = f"import sys; print({HOOK_READY!r}, flush=True); token = sys.stdin.read().strip(); print({HOOK_REPORTED!r}, token, {report!r})"
    return Command("cluster", "odd", (sys.executable, "-c", program), ready=HOOK_READY, report=HOOK_REPORTED, state=("big",))  # fmt: skip


def test_a_report_too_large_for_a_command_line_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem) as caught:
        reported(printing(f'{{"state": {{"big": "{"x" * 70000}"}}}}'), tmp_path / "cell.log")
    assert str(caught.value) == (
        "the report of odd's big is over 65536 bytes: its values go into a verify job's command line (report a"
        " file's path instead)"
    )


@pytest.mark.parametrize("report", ['{"state": {"other": 1}}', "not json", '["state"]'])
def test_a_report_line_of_another_form_is_refused(tmp_path: Path, report: str) -> None:
    with pytest.raises(EnvironmentProblem) as caught:
        reported(printing(report), tmp_path / "cell.log")
    assert str(caught.value) == f"the report of odd's big is no report run-matrix's program wrote: {report}"


def test_after_a_failed_job_a_hook_that_cannot_report_is_a_line_of_the_log(write, own_checkout, tmp_path) -> None:  # noqa: F811  # fmt: skip
    command = counter(write, own_checkout, tmp_path / "ticks", "refuse")
    found, said = reported(command, tmp_path / "cell.log", job_succeeded=False)
    assert found == {}
    assert said[1:] == [
        "==> no report of spawn_counter's ticks once asked to stop after the job: refuse() raised RuntimeError:"
        " the injector would not stop"
    ]


SOAK = """
launch:
  before_submit:
    - call: tests/e2e/own/injector.py:spawn_counter
      args: {{out: {out}}}
      stop: {{call: stop_and_join, args: {{timeout_seconds: 5}}}}
env:
  PYTHONPATH: $${{MILES_ROOT}}
verify:
  soak:
    call: tests/e2e/own/injector.py:assert_count
    args: {{ticks: "$${{hook:spawn_counter.{attribute}}}", out: {out}}}
"""


def test_the_verify_job_gets_the_count_the_hook_reported_after_the_job(cli, specs, own_checkout, users_cluster, tmp_path):  # noqa: F811  # fmt: skip
    out = tmp_path / "ticks"
    specs("soak", extra=SOAK.format(out=out, attribute="ticks"))
    code, report, err = run(cli, "m/fake/soak.yaml", "--skip-prepare", address=users_cluster.address)
    cell = cells(report)["fake/soak"]
    assert (code, cell["status"], cell["reason"]) == (0, "passed", ""), err
    (record,) = cell["verified"]
    assert (record["name"], record["outcome"]) == ("soak", "succeeded")
    ticks = int(out.read_text())
    log = (tmp_path / "logs" / "fake-soak.log").read_text()
    stopped = f'==> spawn_counter: stopped after the job; it reported {{"ticks": {ticks}}}'
    assert log.index("fake miles: training done") < log.index(stopped) < log.index("==> verify soak: ")
    assert f"own check: {ticks} ticks, as the hook wrote" in log  # what the verify job was given


def test_a_missing_attribute_is_an_infrastructure_error_and_no_verify_runs(cli, specs, own_checkout, users_cluster, tmp_path):  # noqa: F811  # fmt: skip
    specs("soak", extra=SOAK.format(out=tmp_path / "ticks", attribute="nope"))
    code, report, err = run(cli, "m/fake/soak.yaml", "--skip-prepare", address=users_cluster.address)
    cell = cells(report)["fake/soak"]
    assert (code, cell["status"], cell["verified"]) != (0, "passed", []), err
    assert (cell["status"], cell["verified"]) == ("error", [])
    assert cell["reason"] == (
        "no report of spawn_counter's nope once asked to stop after the job: the hook returned Counting, which"
        " has no attribute nope (2 attempts)"
    )
    assert [a["outcome"] for a in cell["attempts"]] == ["infra", "infra"]  # retry.infra: 1
