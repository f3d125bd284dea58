"""A matrix's cells end to end: overlays, ${matrix.*}, skips, xfails, timeouts, selection."""

from __future__ import annotations

import datetime

import pytest

from runner import pipeline
from runner.cells import build
from runner.errors import SpecError, UsageError
from tests.test_model import VALID

FUTURE, PAST = "2999-01-01", "2000-01-01"


def matrix_spec(write, matrix: str, extra: str = "") -> list:
    write("base.yaml", VALID)
    path = write("spec.yaml", f"extends: base.yaml\nmatrix:\n{matrix}{extra}")
    return pipeline.cells(path, today=datetime.date(2026, 11, 29))


def test_axis_values_are_references(write):
    cells = matrix_spec(
        write,
        "  axes:\n    engine: [1, 2]\n",
        "args:\n  sglang:\n    rollout-num-gpus-per-engine: ${matrix.engine * 4}\n",
    )
    assert [(c.id, c.spec.args.sglang["rollout-num-gpus-per-engine"]) for c in cells] == [
        ("spec", 4),
        ("spec[engine=2]", 8),
    ]
    assert [c.axes for c in cells] == [{"engine": 1}, {"engine": 2}]


def test_overlay_chosen_by_axis_value_and_path_template(write):
    write("components/precision-bf16.yaml", "args:\n  misc:\n    bf16: true\n")
    write(
        "components/precision-fp16.yaml",
        "args:\n  misc:\n    fp16: true\nwhy:\n  args.misc.fp16: older GPUs\n",
    )
    cells = matrix_spec(
        write,
        "  axes:\n    precision: [bf16, fp16]\n  adjust:\n    precision:\n"
        "      overlay: components/precision-${matrix.precision}.yaml\n",
    )
    assert [sorted(k for k in c.spec.args.misc if k in ("bf16", "fp16")) for c in cells] == [
        ["bf16"],
        ["fp16"],
    ]
    steps = cells[1].composed.provenance[("args", "misc", "fp16")]
    assert (steps[-1].location.file.name, steps[-1].why) == ("precision-fp16.yaml", "older GPUs")
    assert cells[1].path.name == "spec.yaml"


def test_skip_is_decided_on_resolved_values(write):
    cells = matrix_spec(
        write,
        "  axes:\n    hw: [h200, mi355x]\n  adjust:\n    no-rocm:\n      match: {profile.vendor: amd}\n"
        f"      skip: {{reason: known broken, issue: 'https://x/1', expires: {FUTURE}}}\n",
        "hardware: ${matrix.hw}\nargs:\n  sglang:\n    sglang-disable-custom-all-reduce: true\n",
    )
    assert [(c.id, c.status) for c in cells] == [("spec", "runnable"), ("spec[hw=mi355x]", "skipped")]
    assert cells[1].skip.reason == "known broken" and cells[1].skip.issue == "https://x/1"


def test_expired_skip_is_an_error(write):
    with pytest.raises(SpecError) as caught:
        matrix_spec(
            write,
            "  axes:\n    a: [1, 2]\n  adjust:\n    old:\n      match: {a: 2}\n"
            f"      skip: {{reason: flaky, expires: {PAST}}}\n",
        )
    assert str(caught.value) == (
        "spec.yaml:8: error [skip-expired] matrix.adjust.old.skip.expires: the skip of spec[a=2] expired on 2000-01-01:"
        " flaky\n  ==> fix the cell and delete the skip, or renew it with a later expires: date"
    )


def test_skip_needs_a_reason(write):
    with pytest.raises(SpecError) as caught:
        matrix_spec(write, "  adjust:\n    s:\n      skip: {issue: x}\n")
    assert (
        str(caught.value)
        == "spec.yaml:5: error [missing-key] matrix.adjust.s.skip.reason: 'reason' is required"
    )


def test_xfail_and_timeout_later_entries_win(write):
    cells = matrix_spec(
        write,
        "  axes:\n    a: [1, 2]\n  adjust:\n    all:\n      timeout: 600\n"
        "    slow:\n      match: {a: 2}\n      timeout: 1800\n      xfail: upstream 123\n",
    )
    assert [(c.timeout, c.xfail, c.status) for c in cells] == [
        (600, None, "runnable"),
        (1800, "upstream 123", "xfail"),
    ]


def test_overlays_match_on_axes_only(write):
    write("components/x.yaml", "args:\n  misc:\n    x: true\n")
    with pytest.raises(SpecError) as caught:
        matrix_spec(
            write, "  adjust:\n    x:\n      match: {profile.vendor: amd}\n      overlay: components/x.yaml\n"
        )
    assert str(caught.value) == (
        "spec.yaml:5: error [matrix] matrix.adjust.x.match: adjust 'x' applies an overlay but matches on"
        " profile.vendor, which is not an axis\n"
        "  ==> overlays are chosen on axis values; match resolved values only to skip, xfail or time out"
    )


def test_match_on_an_unknown_key(write):
    with pytest.raises(SpecError) as caught:
        matrix_spec(write, "  adjust:\n    x:\n      match: {profile.vendr: amd}\n      xfail: why\n")
    assert str(caught.value) == (
        "spec.yaml:5: error [matrix] matrix.adjust.x.match.profile.vendr: adjust 'x' matches on 'profile.vendr',"
        " which is neither an axis nor a key of the cell\n  ==> did you mean 'profile.vendor'?"
    )


def test_overlay_cannot_extend(write):
    write("components/x.yaml", "extends: ../base.yaml\n")
    with pytest.raises(SpecError, match=r"an overlay applied by a matrix cannot extend"):
        matrix_spec(write, "  adjust:\n    x:\n      overlay: components/x.yaml\n")


def test_cell_ids_select_one_cell(write):
    matrix_spec(write, "  axes:\n    a: [1, 2]\n")
    assert [c.id for c in pipeline.select(["spec.yaml"])] == ["spec", "spec[a=2]"]
    assert [c.id for c in pipeline.select(["spec[a=2]"])] == ["spec[a=2]"]
    assert pipeline.one("spec").id == "spec"
    with pytest.raises(UsageError) as caught:
        pipeline.select(["spec[a=3]"])
    assert (
        str(caught.value) == "no cell 'spec[a=3]': a has the values 1, 2, not '3'; its cells: spec, spec[a=2]"
    )


def test_folder_skips_components(write):
    write("components/x.yaml", "args: {misc: {x: true}}\n")
    matrix_spec(write, "  axes:\n    a: [1, 2]\n")
    assert sorted(p.name for p in build.spec_files([write("x", "").parent])) == ["base.yaml", "spec.yaml"]
