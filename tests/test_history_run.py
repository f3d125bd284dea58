"""History for real: `run-matrix run` on a real Ray with the fake miles, recording into SQLite and a
real PostgreSQL, bands judged against the runs before; then `run-matrix history` draws them."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests import test_run_on_ray as on_ray

users_cluster = on_ray.users_cluster  # the fixtures of the run tests: a real Ray, specs over the fake miles
specs = on_ray.specs
run = on_ray.run

pytestmark = pytest.mark.allow_subprocess
STEP_TIME = "perf/step_time"
LOGPROB = "train/train_rollout_logprob_abs_diff"
BANDS = f"""\
env: {{FAKE_MILES_METRICS_FILE: "${{vars.values}}"}}
expect:
  {STEP_TIME}: {{band: {{rel_up: 0.1, rel_down: 0.1}}, steps: last, baseline: {{runs: 3}}}}
  {LOGPROB}: {{max: 0.1, band: {{rel_up: 0.05, abs_floor_up: 0.001, rel_down: 0.05, abs_floor_down: 0.001}}, steps: all, enforce: false}}
"""


def gates(report: dict) -> dict[tuple[str, int], dict]:
    (cell,) = report["cells"]
    return {(g["metric"], g["step"]): g for g in cell["gates"]}


def test_three_runs_build_a_baseline_a_fourth_outside_its_corridor_fails(
    cli, specs, users_cluster, history_url, tmp_path, monkeypatch
):
    path = specs("async")
    path.write_text(path.read_text().replace("vars: {", f"vars: {{values: {tmp_path}/values.json, ") + BANDS)
    values = tmp_path / "values.json"
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    def run_with(step_time: float, logprob: float = 0.077) -> tuple[int, dict, str]:
        values.write_text(json.dumps({STEP_TIME: step_time, LOGPROB: logprob}))
        summary.write_text("")
        return run(
            cli,
            "m/fake/async.yaml",
            "--skip-prepare",
            "--history",
            history_url,
            address=users_cluster.address,
        )

    code, report, err = run_with(26.0)  # a cold start: reported inactive, never a silent pass
    assert code == 0, err
    cold = gates(report)
    assert {g["verdict"] for g in cold.values()} == {"inactive"}
    assert cold[(STEP_TIME, -1)]["message"] == (
        "perf/step_time at the last step (2): 26; gate inactive (cold start: no trusted run to compare with)"
    )
    assert "| `fake/async` | `perf/step_time` | last | 26 | - | - | 0 | 💤 inactive |" in summary.read_text()

    for step_time in (25.0, 27.0):
        code, report, err = run_with(step_time)
        assert code == 0, err
    assert gates(report)[(STEP_TIME, -1)]["reference"] == 25.5  # the mean of the two runs before

    code, report, err = run_with(40.0)  # outside [23.4, 28.6] around 26
    assert code == 1, err
    (cell,) = report["cells"]
    assert (cell["status"], cell["reason"]) == (
        "failed",
        "perf/step_time at the last step (2): 40 is outside the corridor [23.4, 28.6] (reference 26, mean of "
        "3 trusted runs; band +10% (>= 0) / -10% (>= 0))",
    )
    judged = gates(report)[(STEP_TIME, -1)]
    assert (judged["value"], judged["reference"], judged["corridor"], judged["baseline_runs"]) == (
        40.0,
        26.0,
        "[23.4, 28.6]",
        3,
    )
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(tmp_path / "junit.xml").getroot().iter("property")
    }
    assert properties["gate:perf/step_time:last"] == (
        "fail: value=40 reference=26 corridor=[23.4, 28.6] baseline=3"
    )
    assert properties["history_run"] == cell["history"]
    assert (
        "| `fake/async` | `perf/step_time` | last | 40 | 26 | [23.4, 28.6] | 3 | ❌ fail |"
        in summary.read_text()
    )

    code, report, err = run_with(26.0, logprob=0.09)  # a report-only band broken: reported, not failed
    assert code == 0, err
    broken = gates(report)[(LOGPROB, 1)]
    assert (broken["verdict"], broken["enforce"], broken["reference"]) == ("fail", False, 0.077)
    assert broken["message"].endswith("— reported only (enforce: false)")
    assert gates(report)[(STEP_TIME, -1)]["reference"] == 26.0  # the failed run stayed out of the baseline

    png = tmp_path / "step_time.png"
    monkeypatch.setenv("COLUMNS", "160")
    shown = cli(
        "history", "fake/async", "--history", history_url, "--metric", STEP_TIME, "--plot", "--png", str(png)
    )
    assert shown.code == 0, shown.err
    rows = [line.split() for line in shown.out.splitlines() if re.match(r"^ ?[0-9a-f]{12} ", line)]
    assert [(row[3], row[4]) for row in rows] == [
        ("passed", "26"),
        ("passed", "25"),
        ("passed", "27"),
        ("failed", "40"),
        ("passed", "26"),
    ], shown.out
    assert "no: failed" in shown.out and "no: train/train_rollout" in shown.out
    assert "fake/async: perf/step_time over the last 5 runs" in shown.out  # the terminal plot's title
    assert "corridor" in shown.out and "reference" in shown.out  # ... and its legend
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    data = json.loads(cli("history", "fake/async", "--history", history_url, "--format", "json").out)
    (cell,) = data["cells"]
    assert cell["metric"] == STEP_TIME  # the first gated metric
    assert [(r["value"], r["verdict"], r["trusted"]) for r in cell["runs"]] == [
        (26.0, "inactive", True),
        (25.0, "pass", True),
        (27.0, "pass", True),
        (40.0, "fail", False),
        (26.0, "pass", False),  # its report-only band broke: kept out of baselines
    ]


def test_a_store_that_cannot_be_opened_stops_the_run_before_anything_runs(cli, specs, tmp_path):
    specs("async")
    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database " * 100)
    result = cli("run", "m/fake/async.yaml", "--history", str(broken), "--log-dir", "logs")
    assert result.code == 3
    assert result.err == f"run-matrix: history store {broken} cannot be opened: file is not a database\n"
    assert not Path("logs").exists() and not (tmp_path / "models").exists()  # no prepare step ran


def test_runs_summary_names_a_gate_that_cannot_fail(cli, specs, users_cluster, history_url, tmp_path):
    path = specs("async")
    path.write_text(
        path.read_text().replace("vars: {", f"vars: {{values: {tmp_path}/values.json, ")
        + f'env: {{FAKE_MILES_METRICS_FILE: "${{vars.values}}"}}\nexpect:\n  {LOGPROB}: {{max: 1000}}\n'
    )
    (tmp_path / "values.json").write_text(json.dumps({STEP_TIME: 26.0, LOGPROB: 0.06}))
    code, _, err = run(
        cli, "m/fake/async.yaml", "--skip-prepare", "--history", history_url, address=users_cluster.address
    )
    assert code == 0, err
    # read after the run: its own values count
    assert (
        f"run-matrix: warning [history] fake/async: expect.{LOGPROB}: max: 1000 is more than 10x anything "
        "recorded (the largest |value| of 3 recorded samples is 0.06): a 10x regression passes; tighten it "
        "(`history recommend` proposes a band)\n"
    ) in err, err


def test_a_store_unreadable_after_the_run_costs_the_warnings_never_the_verdict(specs, tmp_path):
    from runner import pipeline
    from runner.cli.run import _gates_that_cannot_fail
    from runner.results.history.location import parse
    from runner.results.history.recorder import Recorder
    from runner.results.history.store import Store

    specs("async", extra=f"expect:\n  {LOGPROB}: {{max: 1000}}\n")
    cells = pipeline.select(["m/fake/async.yaml"])
    path = tmp_path / "history.sqlite"
    store = Store.open(parse(str(path), "--history", from_command_line=True))
    store.close()
    assert (
        _gates_that_cannot_fail(Recorder(store, "", False), cells) == []
    )  # nothing recorded: nothing to say
    path.write_bytes(b"not a database " * 100)
    (found,) = _gates_that_cannot_fail(Recorder(store, "", False), cells)
    assert found == (
        f"the gates' history could not be read: history store {path} cannot be opened: file is not a database"
    )
    assert _gates_that_cannot_fail(Recorder(store, "", False, failed="disk full"), cells) == []
