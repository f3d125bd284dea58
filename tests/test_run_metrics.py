from __future__ import annotations

import math

import pytest

from runner.results.outcome import Check, Sample
from runner.run.metrics import add, check, check_one, collect, parse_line
from schemas.run import Expectation
from tests.test_model import error_of

PREFIX = "(MegatronTrainRayActor pid=1234) [2026-05-13 12:00:00] log_utils.py:453 - "


def test_a_step_line_behind_a_ray_prefix():
    line = PREFIX + "step 3: {'train/ppo_kl': 0.0, 'train/grad_norm': 1.5, 'train/step': 3}"
    assert parse_line(line) == [
        ("train/ppo_kl", Sample("step", 3, 0.0)),
        ("train/grad_norm", Sample("step", 3, 1.5)),
        ("train/step", Sample("step", 3, 3.0)),
    ]


def test_rollout_perf_and_critic_lines():
    assert parse_line("rollout 0: {'rollout/raw_reward': 0.25}") == [
        ("rollout/raw_reward", Sample("rollout", 0, 0.25))
    ]
    assert parse_line(PREFIX + "perf 2: {'perf/step_time': 26.1}") == [
        ("perf/step_time", Sample("perf", 2, 26.1))
    ]
    assert parse_line(PREFIX + "critic-step 1: {'train/value_loss': 0.5}") == [
        ("critic-step:train/value_loss", Sample("critic-step", 1, 0.5))
    ]


def test_nan_and_inf_are_values_and_other_values_are_left_out():
    found = dict(
        parse_line("step 0: {'a': nan, 'b': -inf, 'c': 'text', 'd': [1], 'e': True, 'nan_count': 2}")
    )
    assert math.isnan(found["a"].value)
    assert found["b"].value == -math.inf
    assert found["nan_count"].value == 2.0
    assert set(found) == {"a", "b", "nan_count"}


@pytest.mark.parametrize(
    "line",
    [
        "no metrics here",
        "step 0: {'a': __import__('os').system('true')}",  # never evaluated
        "step 0: {'a': 1",
        "step 0: [1, 2]",
        "stepping 0: {'a': 1}",
    ],
)
def test_lines_that_are_not_metrics(line):
    assert parse_line(line) == []


def test_collect_builds_series_in_order():
    series = collect(["step 0: {'x': 1}", "noise", "step 1: {'x': 2}"])
    assert series == {"x": [Sample("step", 0, 1.0), Sample("step", 1, 2.0)]}
    assert add(series, "step 2: {'x': 3}") == [("x", Sample("step", 2, 3.0))]


SERIES = {"d": [Sample("step", 0, 0.05), Sample("step", 1, 0.2), Sample("step", 2, 0.3)]}


def test_every_step_within_bounds():
    assert check({"d": Expectation(max=0.5)}, SERIES) == (
        Check(
            "d", "value <= 0.5 at every step", True, "d: 0.05, 0.2, 0.3 (expected value <= 0.5 at every step)"
        ),
    )


def test_a_broken_bound_names_the_first_step_and_counts_the_rest():
    assert check_one("d", Expectation(max=0.1, steps="all"), SERIES["d"]) == Check(
        "d",
        "value <= 0.1 at every step",
        False,
        "d is 0.2 at step 1 (and 1 more); expected value <= 0.1 at every step",
    )


def test_one_step_and_the_last_step():
    assert check_one("d", Expectation(min=0.1, step=0), SERIES["d"]).message == (
        "d is 0.05 at step 0; expected 0.1 <= value at step 0"
    )
    assert check_one("d", Expectation(min=0.25, steps="last"), SERIES["d"]).ok
    assert check_one("d", Expectation(max=1, step=7), SERIES["d"]).message == (
        "d has no value at step 7 (steps: 0, 1, 2)"
    )


def test_a_metric_never_printed_fails():
    assert check_one("train/ppo_kl", Expectation(max=1e-8, step=0), []) == Check(
        "train/ppo_kl",
        "value <= 1e-08 at step 0",
        False,
        "train/ppo_kl was never printed (expected value <= 1e-08 at step 0)",
    )


def test_nan_breaks_any_bound():
    assert not check_one("g", Expectation(min=-1e9), [Sample("step", 0, math.nan)]).ok


@pytest.mark.parametrize(
    ("bound", "message"),
    [
        ("{step: 0}", "spec.yaml:6: error [type] expect.train/ppo_kl: give min, max, band or several"),
        (
            "{max: 1, step: 0, steps: all}",
            "spec.yaml:6: error [type] expect.train/ppo_kl: give step (one step) or steps (all, last, a list), not both",
        ),
        (
            "{max: 1, enforce: false}",
            "spec.yaml:6: error [type] expect.train/ppo_kl: baseline and enforce belong to a band: add band: {rel_up: ..., rel_down: ...}",
        ),
        (
            "{band: {rel_up: 0.5}}",
            "spec.yaml:6: error [type] expect.train/ppo_kl.band: give rel_down or abs_floor_down (a side without one has zero width)",
        ),
        (
            "{band: {rel_up: 0.5, rel_down: -1}}",
            "spec.yaml:6: error [type] expect.train/ppo_kl.band.rel_down: Input should be greater than or equal to 0, got -1",
        ),
        (
            "{band: {rel_up: 0.5, abs_floor_down: 1}, steps: [2, 2]}",
            "spec.yaml:6: error [type] expect.train/ppo_kl: steps: give each step once, at least one",
        ),
        (
            "{band: {rel_up: 0.5, abs_floor_down: 1}, baseline: {runs: 0}}",
            "spec.yaml:6: error [type] expect.train/ppo_kl.baseline.runs: Input should be greater than 0, got 0",
        ),
        (
            "{band: {rel_up: 0.5, abs_floor_down: 1}, baseline: {match: [commit]}}",
            "spec.yaml:6: error [type] expect.train/ppo_kl.baseline.match: Input should be 'cell', 'content_hash', 'hardware' or 'miles_commit', got 'commit'",
        ),
        (
            "{max: 1, steps: first}",
            "spec.yaml:6: error [type] expect.train/ppo_kl.steps: give all, last or a list of steps, not 'first'",
        ),
    ],
)
def test_expectation_errors_point_at_the_spec(write, bound, message):
    assert error_of(write, f"expect:\n  train/ppo_kl: {bound}\n") == message
