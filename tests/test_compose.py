from __future__ import annotations

import os

import pytest

from runner.errors import SpecError
from runner.spec.compose import compose


def error_of(path) -> str:
    with pytest.raises(SpecError) as caught:
        compose(path)
    return str(caught.value)


def chain(composed, key: str) -> list[tuple[str, int, str]]:
    return [(s.location.file.name, s.location.line, s.op) for s in composed.provenance[tuple(key.split("."))]]


def test_maps_merge_scalars_and_lists_replace(write):
    write("base.yaml", "a: {x: 1, y: [1, 2]}\nb: keep\n")
    composed = compose(write("over.yaml", "extends: base.yaml\na: {y: [3], z: 4}\n"))
    assert composed.data == {"a": {"x": 1, "y": [3], "z": 4}, "b": "keep"}
    assert [f.name for f in composed.files] == ["base.yaml", "over.yaml"]


def test_provenance_keeps_the_chain_and_the_reason(write):
    write("base.yaml", "a:\n  x: 1\n")
    composed = compose(write("over.yaml", "extends: base.yaml\na:\n  x: 2\nwhy:\n  a.x: two is better\n"))
    assert chain(composed, "a.x") == [("base.yaml", 2, "set"), ("over.yaml", 3, "override")]
    assert composed.provenance[("a", "x")][-1].why == "two is better"
    assert composed.provenance[("a", "x")][0].why == ""


def test_reason_of_a_parent_covers_its_children(write):
    composed = compose(write("spec.yaml", "env:\n  A: '1'\n  B: '2'\nwhy:\n  env: both for the kernels\n"))
    assert {composed.provenance[("env", k)][-1].why for k in "AB"} == {"both for the kernels"}


def test_later_extends_win(write):
    write("a.yaml", "v: a\nonly_a: 1\n")
    write("b.yaml", "v: b\n")
    composed = compose(write("c.yaml", "extends: [a.yaml, b.yaml]\n"))
    assert composed.data == {"v": "b", "only_a": 1}
    assert chain(composed, "v") == [("a.yaml", 1, "set"), ("b.yaml", 1, "override")]


def test_delete_removes_and_is_recorded(write):
    write("base.yaml", "args:\n  perf:\n    sequence-parallel: true\n    tp: 4\n")
    composed = compose(
        write("over.yaml", "extends: base.yaml\nargs:\n  perf:\n    sequence-parallel: !delete\n")
    )
    assert composed.data == {"args": {"perf": {"tp": 4}}}
    assert chain(composed, "args.perf.sequence-parallel") == [
        ("base.yaml", 3, "set"),
        ("over.yaml", 4, "delete"),
    ]


def test_delete_of_a_missing_key_suggests_the_near_one(write):
    write("base.yaml", "args:\n  perf:\n    sequence-parallel: true\n")
    path = write("over.yaml", "extends: base.yaml\nargs:\n  perf:\n    sequence-paralel: !delete\n")
    assert error_of(path) == (
        "over.yaml:4: error [delete] args.perf.sequence-paralel: !delete of a key that nothing before"
        " this file sets\n  ==> did you mean 'sequence-parallel'?"
    )


def test_delete_in_a_new_mapping_is_an_error(write):
    path = write("spec.yaml", "args:\n  perf:\n    x: !delete\n")
    assert error_of(path) == (
        "spec.yaml:3: error [delete] args.perf.x: !delete of a key that nothing before this file sets\n"
        "  ==> remove the line: there is nothing to delete."
    )


def test_replacing_a_mapping_by_a_scalar_is_named(write):
    write("base.yaml", "a:\n  x: 1\n")
    composed = compose(write("over.yaml", "extends: base.yaml\na: 3\n"))
    assert composed.data == {"a": 3}
    assert chain(composed, "a") == [("base.yaml", 1, "set"), ("over.yaml", 2, "replace")]
    assert ("a", "x") not in composed.provenance


def test_extends_cycle_prints_the_chain(write):
    write("a.yaml", "extends: b.yaml\n")
    write("b.yaml", "extends: c.yaml\n")
    write("c.yaml", "extends: a.yaml\n")
    assert error_of(write("top.yaml", "extends: a.yaml\n")) == (
        "c.yaml:1: error [extends-cycle] extends: forms a cycle: a.yaml -> b.yaml -> c.yaml -> a.yaml\n"
        "  ==> reached through b.yaml:1\n"
        "  ==> reached through a.yaml:1\n"
        "  ==> reached through top.yaml:1\n"
        "  ==> a spec cannot extend itself, directly or through its bases."
    )


def test_an_error_in_an_extended_file_names_the_chain(write):
    write("list.yaml", "- a\n")
    write("mid.yaml", "x: 1\nextends: list.yaml\n")
    assert error_of(write("spec.yaml", "extends: mid.yaml\n")) == (
        "list.yaml:1: error [yaml]: a spec must be a mapping of keys to values, not a list\n"
        "  ==> reached through mid.yaml:2\n"
        "  ==> reached through spec.yaml:1"
    )


@pytest.mark.parametrize(
    ("target", "what"), [(".", "a directory"), ("/dev/zero", "a device"), ("pipe.yaml", "a FIFO")]
)
def test_extends_only_regular_files(write, monkeypatch, target: str, what: str):
    monkeypatch.setenv("RUN_MATRIX_ALLOW_ROOTS", "/dev")  # else /dev/zero is refused as outside the root (G14)
    spec = write("spec.yaml", f"extends: {target}\n")
    if target == "pipe.yaml":
        os.mkfifo(spec.parent / target)
    assert error_of(spec).startswith(
        f"spec.yaml:1: error [missing-file] extends: '{target}' is not a file: it is {what}"
    )


def test_extends_a_symlink_loop(write):
    spec = write("spec.yaml", "extends: loop.yaml\n")
    (spec.parent / "loop.yaml").symlink_to(spec.parent / "loop.yaml")
    assert error_of(spec).startswith(
        "spec.yaml:1: error [missing-file] extends: 'loop.yaml' is a symlink loop"
    )


def test_each_file_is_composed_once_however_often_it_is_reached(write):
    write("f0.yaml", "a: 0\n")
    for i in range(1, 30):  # each file extends the two before it: 2**30 paths, 30 files
        bases = sorted({f"f{max(0, i - 2)}.yaml", f"f{i - 1}.yaml"})
        write(f"f{i}.yaml", f"extends: [{', '.join(bases)}]\nk{i}: {i}\n")
    composed = compose(write("spec.yaml", "extends: f29.yaml\n"))
    assert composed.data["k29"] == 29 and len(composed.files) == 31


def test_extends_missing_file(write):
    assert error_of(write("sub/spec.yaml", "x: 1\nextends: ../nowhere.yaml\n")) == (
        f"sub/spec.yaml:2: error [missing-file] extends: '../nowhere.yaml' does not exist"
        f" (looked for {(write('x', '').parent / 'nowhere.yaml')})\n"
        "  ==> paths in extends: are relative to the file that names them."
    )


def test_extends_must_be_paths(write):
    assert error_of(write("spec.yaml", "extends: {a: 1}\n")) == (
        "spec.yaml:1: error [type] extends: expected a path or a list of paths, got {'a': 1}"
    )


def test_why_must_name_a_key_this_file_sets(write):
    write("base.yaml", "args:\n  perf:\n    tp: 1\n")
    path = write("over.yaml", "extends: base.yaml\nargs:\n  perf:\n    tp: 2\nwhy:\n  args.perf.pt: typo\n")
    assert error_of(path) == (
        "over.yaml:6: error [why] why.args.perf.pt: why: gives a reason for 'args.perf.pt',"
        " which this file does not set\n  ==> did you mean 'args.perf.tp'?"
    )


def test_all_problems_of_a_file_are_reported_together(write):
    write("base.yaml", "a: 1\n")
    path = write("over.yaml", "extends: base.yaml\nb: !delete\nc: !delete\n")
    assert str(error_of(path)).count("error [delete]") == 2


def test_one_why_entry_gives_several_keys_one_reason(write):
    write("base.yaml", "args:\n  misc:\n    a: 1\n    b: 1\nenv:\n  X: '1'\n")
    path = write(
        "over.yaml",
        "extends: base.yaml\nargs:\n  misc:\n    a: 2\n    b: 2\nenv:\n  X: '2'\n"
        "why:\n  args.misc.{a, b}, env.X: one reason for three keys\n",
    )
    composed = compose(path)
    reasons = {key: steps[-1].why for key, steps in composed.provenance.items() if steps[-1].why}
    assert reasons == {
        ("args", "misc", "a"): "one reason for three keys",
        ("args", "misc", "b"): "one reason for three keys",
        ("env", "X"): "one reason for three keys",
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "args.misc.{a, c}",
            "over.yaml:6: error [why] why.args.misc.{a, c}: why: gives a reason for 'args.misc.c', which this"
            " file does not set\n  ==> a reason belongs in the file that makes the change.",  # a is named
        ),
        (
            "args.misc.{a",
            "over.yaml:6: error [why] why.args.misc.{a: why: 'args.misc.{a': a key list takes one {a, b}"
            " group per key, closed",
        ),
        (
            "args.misc.a,",
            "over.yaml:6: error [why] why.args.misc.a,: why: 'args.misc.a,': an empty key: write"
            " keys as a.b, a.c or a.{b, c}",
        ),
        (
            "args.misc.a, args.misc.{a}",
            "over.yaml:6: error [why] why.args.misc.a, args.misc.{a}: why: 'args.misc.a' is given a reason"
            " twice\n  ==> name each key once",
        ),
    ],
)
def test_a_bad_key_list_names_file_line_and_key(write, entry, message):
    write("base.yaml", "args:\n  misc:\n    a: 1\n")
    path = write("over.yaml", f"extends: base.yaml\nargs:\n  misc:\n    a: 2\nwhy:\n  '{entry}': reason\n")
    assert str(error_of(path)) == message


def test_a_why_next_to_its_keys_explains_them_relative_to_its_mapping(write):
    write("base.yaml", "args:\n  misc:\n    a: 1\n    b: 1\n")
    path = write(
        "over.yaml",
        "extends: base.yaml\nargs:\n  misc:\n    a: 2\n    b: 2\n    why:\n      a, b: set together\n",
    )
    composed = compose(path)
    assert composed.data["args"]["misc"] == {"a": 2, "b": 2}  # a nested why: is no key of the spec
    assert [composed.provenance[("args", "misc", k)][-1].why for k in "ab"] == ["set together"] * 2


def test_a_nested_why_names_keys_of_its_own_mapping(write):
    path = write("spec.yaml", "args:\n  misc:\n    a: 2\n    why:\n      c: not here\nenv:\n  why: [1]\n")
    assert error_of(path) == (
        "spec.yaml:5: error [why] args.misc.why.c: why: gives a reason for 'args.misc.c', which this file"
        " does not set\n  ==> did you mean 'args.misc.a'?\n"
        "spec.yaml:7: error [type] env.why: env.why: expected a mapping of keys (or key lists) to reasons"
        " (text)\n  ==> why is reserved for reasons at every level: text, or keys to reasons"
    )


def test_a_why_as_text_explains_the_mapping_it_stands_in(write):
    path = write("spec.yaml", "requires:\n  fix:\n    why: the fix is in flight\n    kind: git\n")
    assert compose(path).provenance[("requires", "fix")][-1].why == "the fix is in flight"


def test_a_key_named_why_in_a_checks_arguments_is_an_argument_not_a_reason(write):
    text = (
        "verify:\n  same:\n    call: checks.compare\n    why: its own reason\n"
        "    args:\n      why: [1, 2]\n      mode: {why: text, cells: 4}\n"
    )
    composed = compose(write("spec.yaml", text))
    assert composed.data["verify"]["same"] == {
        "call": "checks.compare",
        "args": {"why": [1, 2], "mode": {"why": "text", "cells": 4}},  # the check is given both
    }
    assert composed.provenance[("verify", "same")][-1].why == "its own reason"
