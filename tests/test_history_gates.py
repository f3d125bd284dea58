"""gates: coordinates and corridors as miles' tests/ci/metric_history decides them."""

from __future__ import annotations

import math

import pytest

from runner.results.history.gates import LAST, Reference, SelectionError, coordinates, judge
from runner.results.outcome import Sample
from schemas.run import Band, Expectation


def series(*values: float, start: int = 0) -> list[Sample]:
    return [Sample("step", start + i, v) for i, v in enumerate(values)]


def band(**sides: float) -> Band:
    return Band(**sides)


def test_last_is_one_coordinate_keyed_minus_one_whatever_step_it_was():
    assert coordinates(series(1.0, 2.0, 3.0, start=5), "last") == [(LAST, 7, 3.0)]


def test_all_fans_out_one_coordinate_per_step():
    assert coordinates(series(1.0, 2.0), "all") == [(0, 0, 1.0), (1, 1, 2.0)]


def test_a_list_picks_the_named_steps_and_a_missing_one_is_an_error():
    assert coordinates(series(1.0, 2.0, 3.0), [2, 0]) == [(2, 2, 3.0), (0, 0, 1.0)]
    with pytest.raises(SelectionError, match=r"^has no value at step 5 \(steps: 0, 1, 2\)$"):
        coordinates(series(1.0, 2.0, 3.0), [0, 5])


@pytest.mark.parametrize(
    ("samples", "steps", "message"),
    [
        ([], "all", "was never printed"),
        (
            series(1.0, math.nan),
            "last",
            "is nan at its last value (step 1); a gate judges only finite values",
        ),
        (series(math.inf, 1.0), "all", "is inf at step 0; a gate judges only finite values"),
        ([Sample("step", 0, 1.0), Sample("rollout", 0, 2.0)], "all", "has two values at step 0"),
    ],
)
def test_what_cannot_be_selected_is_an_error_never_a_skip(samples, steps, message):
    with pytest.raises(SelectionError) as caught:
        coordinates(samples, steps)
    assert str(caught.value) == message


def test_a_non_finite_value_no_selection_picks_is_ignored():
    assert coordinates(series(math.nan, 2.0), "last") == [(LAST, 1, 2.0)]


@pytest.mark.parametrize(
    ("sides", "ref", "corridor"),
    [
        ({"rel_up": 0.5, "rel_down": 0.2}, 10.0, (8.0, 15.0)),
        ({"rel_up": 0.5, "abs_floor_up": 0.02, "rel_down": 0.8, "abs_floor_down": 0.02}, 0.0, (-0.02, 0.02)),
        ({"rel_up": 0.5, "abs_floor_up": 0.02, "rel_down": 0.8, "abs_floor_down": 0.02}, -1.0, (-1.8, -0.5)),
        ({"abs_floor_up": 1, "abs_floor_down": 2}, 5.0, (3.0, 6.0)),
    ],
)
def test_each_side_is_the_larger_of_rel_times_abs_ref_and_the_floor(sides, ref, corridor):
    assert band(**sides).corridor(ref) == pytest.approx(corridor)


def expectation(**fields: object) -> Expectation:
    return Expectation.model_validate({"band": {"rel_up": 0.2, "rel_down": 0.2}, **fields})


def test_a_value_outside_the_corridor_fails_naming_metric_step_value_reference_and_corridor():
    baseline = {("m", 0): Reference(0.1, 3), ("m", 1): Reference(0.1, 3)}
    first, second = judge("m", expectation(), series(0.1, 0.5), baseline)
    assert (first.verdict, second.verdict, second.fails) == ("pass", "fail", True)
    assert (second.value, second.reference, second.low, second.high, second.baseline_runs) == (
        0.5,
        0.1,
        pytest.approx(0.08),
        pytest.approx(0.12),
        3,
    )
    assert second.message == (
        "m at step 1: 0.5 is outside the corridor [0.08, 0.12] (reference 0.1, mean of 3 trusted runs; "
        "band +20% (>= 0) / -20% (>= 0))"
    )


def test_no_baseline_is_inactive_a_cold_start_not_a_pass():
    (gate,) = judge("m", expectation(steps="last"), series(0.5), {})
    assert (gate.verdict, gate.fails, gate.reference, gate.corridor) == ("inactive", False, None, "")
    assert (
        gate.message
        == "m at the last step (0): 0.5; gate inactive (cold start: no trusted run to compare with)"
    )


def test_enforce_false_reports_without_failing():
    (gate,) = judge(
        "m", expectation(steps="last", enforce=False), series(0.5), {("m", LAST): Reference(0.1, 1)}
    )
    assert (gate.verdict, gate.fails) == ("fail", False)
    assert gate.message.endswith(
        "mean of 1 trusted run; band +20% (>= 0) / -20% (>= 0)) — reported only (enforce: false)"
    )


def test_an_unselectable_metric_is_an_error_that_fails_when_enforced():
    (gate,) = judge("m", expectation(steps=[3]), series(0.5), {})
    assert (gate.verdict, gate.fails, gate.message) == ("error", True, "m has no value at step 3 (steps: 0)")


def test_fixed_bounds_alone_make_no_gate():
    assert judge("m", Expectation(max=1), series(0.5), {}) == []
