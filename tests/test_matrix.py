"""Expansion, one rule at a time (as tox's matrix tests do), then its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.cells.matrix import cell_id, expand
from runner.errors import Location, SpecError
from schemas.matrix import Matrix


def where(key: tuple[str, ...]) -> Location:
    return Location(Path("spec.yaml"), {("matrix",): 1, ("matrix", "zip"): 3, ("matrix", "exclude"): 4,
                                        ("matrix", "include"): 5}.get(key))  # fmt: skip


def ids(**matrix: object) -> list[str]:
    m = Matrix(**matrix)
    return [cell_id("s", combo, m) for combo in expand(m, where)]


def error_of(**matrix: object) -> str:
    with pytest.raises(SpecError) as caught:
        expand(Matrix(**matrix), where)
    return str(caught.value)


def test_no_axes_is_one_cell_named_like_the_spec():
    assert ids() == ["s"]


def test_product_in_declaration_order_defaults_left_out_of_ids():
    assert ids(axes={"a": [1, 2], "b": ["x", "y"]}) == ["s", "s[b=y]", "s[a=2]", "s[a=2,b=y]"]


def test_booleans_show_as_yaml_writes_them():
    assert ids(axes={"fp8_rollout": [False, True]}) == ["s", "s[fp8_rollout=true]"]


def test_zip_pairs_instead_of_crossing():
    assert ids(axes={"gpus": [8, 4], "engine": [8, 2], "fp8": [False, True]}, zip=[["gpus", "engine"]]) == [
        "s", "s[fp8=true]", "s[gpus=4,engine=2]", "s[gpus=4,engine=2,fp8=true]"
    ]  # fmt: skip


def test_exclude_removes_partial_matches():
    assert ids(axes={"a": [1, 2], "b": ["x", "y"]}, exclude=[{"a": 2}]) == ["s", "s[b=y]"]


def test_exclude_compares_types_strictly():
    assert ids(axes={"a": [True, 1]}, exclude=[{"a": 1}]) == ["s"]


def test_include_adds_a_whole_cell():
    assert ids(axes={"a": [1, 2]}, include=[{"a": 3}]) == ["s", "s[a=2]", "s[a=3]"]


def test_include_may_bring_back_an_excluded_cell():
    assert ids(axes={"a": [1, 2]}, exclude=[{"a": 2}], include=[{"a": 2}]) == ["s", "s[a=2]"]


def test_cap_counts_before_expanding():
    assert error_of(axes={"a": list(range(100)), "b": list(range(100))}, max_cells=5000) == (
        "spec.yaml:1: error [matrix] matrix: the matrix has 10000 cells (the product of its axes: 100 (a) x 100 (b)),"
        " more than max_cells 5000\n  ==> remove values, exclude cells, or raise matrix.max_cells; nothing is truncated"
    )


def test_cap_counts_includes():
    assert "the matrix has 3 cells (its cells after include" in error_of(
        axes={"a": [1, 2]}, include=[{"a": 3}], max_cells=2
    )


def test_include_must_give_every_axis():
    assert error_of(axes={"a": [1], "b": [1]}, include=[{"a": 2}]) == (
        "spec.yaml:5: error [matrix] matrix.include: include entry 1 gives no value for b\n"
        "  ==> an include adds a whole cell: give every axis (use adjust: to change existing cells)"
    )


def test_include_never_edits_an_existing_cell():
    assert error_of(axes={"a": [1, 2]}, include=[{"a": 2}]) == (
        "spec.yaml:5: error [matrix] matrix.include: include entry 1 is already a cell (a=2)\n"
        "  ==> include only adds cells; use adjust: to change one"
    )


def test_unknown_axis_in_exclude_suggests():
    assert error_of(axes={"fp8_rollout": [False, True]}, exclude=[{"fp8_rolout": True}]) == (
        "spec.yaml:4: error [matrix] matrix.exclude: exclude names 'fp8_rolout', which is not an axis\n"
        "  ==> did you mean 'fp8_rollout'?"
    )


def test_zip_lengths_must_agree():
    assert error_of(axes={"a": [1, 2], "b": [1]}, zip=[["a", "b"]]) == (
        "spec.yaml:3: error [matrix] matrix.zip: zipped axes must have as many values each: a has 2, b has 1\n"
        "  ==> give each zipped axis the same number of values"
    )


def test_an_axis_zips_once():
    assert "axis 'a' is in two zip groups" in error_of(axes={"a": [1], "b": [1], "c": [1]}, zip=[["a", "b"], ["a", "c"]])


def test_an_empty_axis_is_an_error_not_an_empty_matrix():
    assert error_of(axes={"a": [1], "b": []}) == (
        "spec.yaml: error [matrix] matrix.axes.b: axis 'b' has no values: the matrix would have no cells\n"
        "  ==> give it at least one value (the first is the default), or delete the axis with !delete"
    )


def test_a_repeated_axis_value_is_an_error():
    assert error_of(axes={"a": [True, False, True]}) == (
        "spec.yaml: error [matrix] matrix.axes.a: axis 'a' lists true twice: two cells would have one id\n"
        "  ==> list each value once"
    )
    assert ids(axes={"a": [1, True]}) == ["s", "s[a=true]"]  # 1 is not true


def test_excluding_every_cell_is_an_error():
    assert error_of(axes={"a": [1, 2]}, exclude=[{"a": 1}, {"a": 2}]) == (
        "spec.yaml:4: error [matrix] matrix.exclude: exclude removes every cell: the spec would test nothing\n"
        "  ==> exclude fewer cells"
    )
