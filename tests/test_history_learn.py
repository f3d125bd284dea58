"""Gates that learn from the history, against a real SQLite file and a real PostgreSQL: a band
recommended from the trusted runs, gates that cannot fail named, a baseline per software stack."""

from __future__ import annotations

import json
import math

import pytest

from runner import pipeline
from runner.results.history.gates import LAST, Reference
from runner.results.history.location import parse
from runner.results.history.reads import Reader, points
from runner.results.history.recommend import recommend
from runner.results.history.recorder import stack_of
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import Sample
from schemas.run import Baseline
from tests.test_run_on_ray import specs

__all__ = ["specs"]
STEP_TIME = "perf/step_time"
LOGPROB = "train/train_rollout_logprob_abs_diff"


def _record(store: Store, identity: Identity, values: dict[str, list[float]], trusted: bool = True) -> None:
    series = {name: [Sample("step", k, v) for k, v in enumerate(found)] for name, found in values.items()}
    status = "passed" if trusted else "failed"
    store.record(AttemptRecord(identity, 1, "job", "succeeded", status, trusted, "", series))


def _cell_and_store(specs, history_url: str, expect: str):
    specs("async", extra=expect)
    (cell,) = pipeline.select(["m/fake/async.yaml"])
    identity = Identity(
        cell.id,
        "m/fake/async.yaml",
        cell.content_hash,
        cell.profile.name,
        "",
        "0",
        stack_of(cell.profile, {}),
    )
    return identity, Store.open(parse(history_url, "--history", from_command_line=True))


def test_a_stack_change_starts_a_new_baseline_and_history_shows_the_step(history_url):
    store = Store.open(parse(history_url, "--history", from_command_line=True))
    old = Identity("nv/a", "m/a.yaml", "abc", "h200", "", "0", "sglang:v0.5.9")
    new = Identity(**{**old.__dict__, "stack": "sglang:v0.5.10"})
    for value in (1.0, 2.0, 3.0):
        _record(store, old, {"m": [value]})
    assert store.baseline(old, Baseline(), {"m": "last"}) == {("m", LAST): Reference(2.0, 3)}
    assert store.baseline(new, Baseline(), {"m": "last"}) == {}  # the new stack: a cold start
    assert store.baseline(new, Baseline(match=["cell"]), {"m": "all"}) == {}  # whatever else it matches
    _record(store, new, {"m": [9.0]})
    assert store.baseline(new, Baseline(), {"m": "last"}) == {("m", LAST): Reference(9.0, 1)}
    store.close()
    reader = Reader.open(parse(history_url, "--history", from_command_line=True))
    _, found = points(reader, "nv/a", "m", 10)
    reader.close()
    assert [p.stack for p in found] == ["sglang:v0.5.9"] * 3 + ["sglang:v0.5.10"]


def test_history_shows_the_stack_step(cli, history_url, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    store = Store.open(parse(history_url, "--history", from_command_line=True))
    old = Identity("nv/a", "m/a.yaml", "abc", "h200", "", "0", "img:1")
    for identity in (old, old, Identity(**{**old.__dict__, "stack": "img:2"})):
        _record(store, identity, {"m": [1.0]})
    store.close()
    shown = cli("history", "nv/a", "--history", history_url, "--no-plot")
    assert shown.code == 0, shown.err
    assert "stack img:2: a new baseline (cold start)" in shown.out


def test_validate_history_names_a_bound_of_1000_on_a_metric_that_never_exceeded_006(cli, specs, history_url):
    expect = f"expect:\n  {LOGPROB}: {{max: 1000}}\n  {STEP_TIME}: {{band: {{rel_up: 0.1, rel_down: 0.1}}}}\n"
    identity, store = _cell_and_store(specs, history_url, expect)
    for value in (0.05, 0.06, 0.04):
        _record(store, identity, {LOGPROB: [value, value / 2], STEP_TIME: [26.0]})
    store.close()
    found = cli("validate", "m/fake/async.yaml", "--history", history_url, "--no-cache")
    assert found.code == 0, found.err
    assert (
        f"warning [history] fake/async: expect.{LOGPROB}: max: 1000 is more than 10x anything recorded "
        "(the largest |value| of 6 recorded samples is 0.06): a 10x regression passes" in found.out
    ), found.out
    assert f"expect.{STEP_TIME}: its band never had a baseline" in found.out
    strict = cli("validate", "m/fake/async.yaml", "--history", history_url, "--no-cache", "--strict")
    assert strict.code == 2


def test_recommend_proposes_a_band_around_three_recorded_runs(cli, specs, history_url):
    expect = f"expect:\n  {STEP_TIME}: {{band: {{rel_up: 0.5, rel_down: 0.5}}, steps: last}}\n"
    identity, store = _cell_and_store(specs, history_url, expect)
    for value in (25.0, 26.0, 27.0):
        _record(store, identity, {STEP_TIME: [30.0, value]})
    _record(store, identity, {STEP_TIME: [30.0, 80.0]}, trusted=False)  # never in a recommendation
    store.close()
    found = cli("history", "recommend", "m/fake/async.yaml", "--history", history_url, "--format", "json")
    assert found.code == 0, found.err
    ((metric,),) = [cell["metrics"] for cell in json.loads(found.out)["cells"]]
    assert (metric["runs"], metric["mean"], metric["spread"]) == (3, 26.0, 1.0)
    # t(0.995, 2 df) = 9.925, x sqrt(1 + 1/3): +-11.46 around 26, 44.1% of it, rounded up
    assert metric["band"] == {"rel_up": 0.45, "abs_floor_up": 0.0, "rel_down": 0.45, "abs_floor_down": 0.0}
    assert metric["implied_rate"] < 0.01 < 0.3 < metric["megatron_rate"]
    assert metric["more_runs"] > 0
    text = cli("history", "recommend", "fake/async", "--history", history_url)
    assert "band {rel_up: 0.45, abs_floor_up: 0, rel_down: 0.45, abs_floor_down: 0}" in text.out, text.err


def test_recommend_says_why_there_is_no_band_for_zero_or_one_run_and_skips_non_finite_values():
    assert "no trusted run" in recommend("m", {}).problem
    assert "1 trusted run" in recommend("m", {LAST: [1.0, math.nan]}).problem
    found = recommend("m", {0: [1.0, 1.1, math.inf, 0.9], 1: [0.0, 0.01, -0.01, math.nan]})
    assert found.runs == 3 and found.band["abs_floor_up"] > 0  # step 1's mean is 0: a floor covers it
    same = recommend("m", {LAST: [2.0, 2.0, 2.0]})
    assert same.band["abs_floor_up"] > 0 and same.implied_rate == 0


@pytest.mark.parametrize(
    ("runs", "band", "megatron_rate"),
    [(3, 0.23, 0.3235), (5, 0.099, 0.1476), (10, 0.068, 0.0413), (30, 0.056, 0.0037)],
)
def test_megatrons_rule_and_the_prediction_interval_on_one_history(runs, band, megatron_rate):
    """The fixture history of README's table: runs of a metric of mean 1 and sd 0.02 (evenly spread
    normal quantiles). The prediction interval keeps its 1% whatever the number of runs; Megatron's
    1.5x the largest variation fails a healthy run a third of the time from 3 runs and is looser than
    asked from 30."""
    from statistics import NormalDist

    values = [1.0 + 0.02 * NormalDist().inv_cdf((i + 0.5) / runs) for i in range(runs)]
    found = recommend("loss", {LAST: values})
    assert 0.009 <= found.implied_rate <= 0.01  # the stated rate holds under the stated model
    assert found.band["rel_up"] == band
    assert round(found.megatron_rate, 4) == megatron_rate
