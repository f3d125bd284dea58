"""ci.plan and ci.present: routing by hardware and GPUs, balancing, what is left out, the outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.ci import budget, present
from runner.ci.plan import balance, plan, route
from schemas.ci import CI
from schemas.ci_plan import CiPlan, PlannedCell
from schemas.runners import RunnerClass

ROOT = Path(__file__).parents[1]
H200 = RunnerClass(label=["self-hosted", "h200"], hardware="h200", gpus=8, count=2)
MI350_SHARE = RunnerClass(label="mi350-4gpu", hardware="mi350x", gpus=4, count=2, suites=["stage-c-4-gpu-mi350"])
MI350_HOST = RunnerClass(label="mi350-8gpu", hardware="mi350x", gpus=8, count=1)
B200 = RunnerClass(label="b200", hardware="b200", gpus=8, count=1)


def cell(name: str, hardware: str = "h200", gpus: int = 8, est: int = 600, **ci: Any) -> PlannedCell:
    return PlannedCell(
        id=name, spec=f"{name}.yaml", hardware=hardware, gpus=gpus, est_time=est, est_source="spec",
        content_hash="0" * 12, ci=CI(**ci),
    )


def test_the_smallest_class_with_the_hardware_and_enough_gpus_takes_a_cell():
    classes = [MI350_HOST, MI350_SHARE, H200]
    assert route(cell("a", "mi350x", 4), classes) == 1  # the share, not the whole host
    assert route(cell("b", "mi350x", 2), classes) == 1
    assert route(cell("c", "mi350x", 8), classes) == 0
    assert route(cell("d", "h200", 8), classes) == 2


def test_a_cell_no_class_can_take_says_why():
    classes = [MI350_SHARE, H200]
    assert route(cell("a", "mi350x", 8), classes) == (
        "needs 8 GPUs; the mi350x runners own fewer (mi350-4gpu: 4)"
    )
    assert route(cell("b", "mi300x", 8), classes) == (
        "no runner class has hardware mi300x (they have: h200, mi350x)"
    )
    assert route(cell("c", runs_on="h100-8gpu"), classes) == (
        "ci.runs_on: 'h100-8gpu' names no runner class (labels: mi350-4gpu, self-hosted,h200)"
    )
    assert route(cell("d", "mi350x", 8, suite="stage-c-4-gpu-mi350"), [MI350_SHARE, MI350_HOST]) == (
        "needs 8 GPUs; the mi350x runners serving suite stage-c-4-gpu-mi350 own fewer (mi350-4gpu: 4)"
    )


def test_runs_on_and_suite_choose_among_the_classes():
    classes = [MI350_HOST, MI350_SHARE]
    assert route(cell("a", "mi350x", 2, runs_on="mi350-8gpu"), classes) == 0  # named: not the smallest
    assert route(cell("b", "mi350x", 4, suite="stage-c-4-gpu-mi350"), classes) == 1
    assert route(cell("c", "mi350x", 4, suite="a-suite-no-class-serves"), classes) == 1  # any class
    assert route(cell("d", "h200", runs_on="mi350-8gpu"), classes) == (
        "no runner class labelled mi350-8gpu has hardware h200 (they have: mi350x)"
    )


def test_balancing_is_longest_first_onto_the_least_loaded_shard():
    cells = [cell(name, est=est) for name, est in [("a", 100), ("b", 700), ("c", 300), ("d", 300), ("e", 500)]]
    shards = balance(cells, 2)
    assert [[c.id for c in s] for s in shards] == [["b", "d"], ["e", "c", "a"]]
    assert [sum(c.est_time for c in s) for s in shards] == [1000, 900]


@settings(max_examples=200, deadline=None)
@given(
    times=st.lists(st.integers(min_value=1, max_value=10_000), min_size=0, max_size=60),
    count=st.integers(min_value=1, max_value=12),
)
def test_every_cell_lands_once_and_no_shard_exceeds_the_bound(times: list[int], count: int) -> None:
    cells = [cell(f"c{i}", est=t) for i, t in enumerate(times)]
    shards = balance(cells, count)
    assert sorted(c.id for s in shards for c in s) == sorted(c.id for c in cells)
    bound = max(times, default=0) + sum(times) / count
    assert all(sum(c.est_time for c in s) <= bound for s in shards)


def test_the_plan_numbers_shards_across_classes_and_lists_what_it_left_out():
    cells = [
        cell("nv-a", est=1800), cell("nv-b", est=600), cell("nv-c", est=300),
        cell("amd-a", "mi350x", 4, est=900), cell("amd-8", "mi350x", 8),
        cell("nightly", nightly=True), cell("skipped"),
    ]
    made = plan(cells, [H200, MI350_SHARE, B200], {"skipped": "skipped: no H200 in this lab"},
                nightly=False, specs=["matrices"])
    assert [(s.shard, s.label, s.cells, s.load) for s in made.shards] == [
        (0, "self-hosted,h200", ["nv-a"], 1800),
        (1, "self-hosted,h200", ["nv-b", "nv-c"], 900),
        (2, "mi350-4gpu", ["amd-a"], 900),
    ]
    assert [(u.id, u.reason) for u in made.unplaced] == [
        ("amd-8", "needs 8 GPUs; the mi350x runners own fewer (mi350-4gpu: 4)")
    ]
    assert [(o.id, o.reason) for o in made.left_out] == [
        ("nightly", "nightly: planned only with --nightly"),
        ("skipped", "skipped: no H200 in this lab"),
    ]
    h200, share, b200 = made.classes
    assert (h200.cells, h200.total, h200.longest, h200.bound, h200.shards) == (3, 2700, 1800, 3150.0, [0, 1])
    assert (share.shards, b200.cells, b200.shards) == ([2], 0, [])
    with_nightly = plan(cells, [H200], {}, nightly=True, specs=["matrices"])
    assert "nightly" in {c for s in with_nightly.shards for c in s.cells}


def test_github_matrix_and_markdown():
    made = plan([cell("a", est=60), cell("b[x=1]", "mi350x", 4, est=30)], [H200, MI350_SHARE], {},
                nightly=False, specs=["matrices"])
    assert present.github(made) == {
        "include": [
            {"runs-on": ["self-hosted", "h200"], "shard": 0, "cells": ["a"]},
            {"runs-on": "mi350-4gpu", "shard": 1, "cells": ["b[x=1]"]},
        ]
    }
    assert present.markdown(made) == (
        "## CI plan: 2 cells on 2 runners\n"
        "\n"
        "GPU-hours: 0.0, retries counted at their maximum\n"
        "\n"
        "### `self-hosted,h200`: h200, 8 GPUs each, 2 runners\n"
        "\n"
        "| shard | load (s) | cells |\n"
        "|---:|---:|---|\n"
        "| 0 | 60 | `a` |\n"
        "\n"
        "1 cell, 60 s in all; bound: longest 60 s + 60 s / 2 = 90 s; 1 runner idle\n"
        "\n"
        "### `mi350-4gpu`: mi350x, 4 GPUs each, 2 runners\n"
        "\n"
        "| shard | load (s) | cells |\n"
        "|---:|---:|---|\n"
        "| 1 | 30 | `b[x=1]` |\n"
        "\n"
        "1 cell, 30 s in all; bound: longest 30 s + 30 s / 2 = 45 s; 1 runner idle\n"
    )


def test_the_plan_json_matches_its_checked_in_schema():
    jsonschema = pytest.importorskip("jsonschema")
    made = plan([cell("a"), cell("b", "mi300x")], [H200], {"c": "x"}, nightly=False, specs=["m"])
    schema = json.loads((ROOT / "schemas" / "ci-plan.schema.json").read_text())
    data = made.model_dump(mode="json")
    jsonschema.validate(data, schema)
    assert CiPlan.model_validate_json(json.dumps(data)) == made
    broken = {**data, "shards": [{**data["shards"][0], "shard": -1}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_a_github_matrix_has_at_most_256_jobs():
    from runner.errors import UsageError

    many = RunnerClass(label="h200", hardware="h200", gpus=8, count=300)
    made = plan([cell(f"c{i}") for i in range(257)], [many], {}, nightly=False, specs=["m"])
    with pytest.raises(UsageError) as caught:
        present.github(made)
    assert str(caught.value) == (
        "the plan has 257 shards; GitHub Actions runs at most 256 jobs of one matrix: lower the counts in the "
        "runners file, or plan the specs in parts (one matrix job each)"
    )
    assert len(present.github(plan([cell(f"c{i}") for i in range(256)], [many], {}, nightly=False, specs=["m"]))["include"]) == 256


def test_the_history_variable_is_the_stores_own() -> None:
    from runner.ci.estimate import HISTORY_URL
    from runner.results.history.location import ENV

    assert HISTORY_URL == ENV


def test_gpu_hours_are_shown_to_one_decimal():
    made = plan([cell("a", est=60)], [H200], {}, nightly=False, specs=["matrices"])
    costly = made.model_copy(update={"gpu_hours": 16.8331})
    assert "GPU-hours: 16.8, retries counted at their maximum\n" in present.markdown(costly)
    assert budget.over(costly, 10) == (
        "the plan needs 16.8 GPU-hours, over --budget-gpu-hours 10; largest: a 0.0 h (60 s x 8 GPUs x 1)."
        " Plan fewer cells (-k, --changed) or raise the budget"
    )
    assert [budget.hours(h) for h in (0, 0.01, 0.26, 2.0)] == ["0.0", "under 0.1", "0.3", "2.0"]
