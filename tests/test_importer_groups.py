"""groups: the launched words split back into the variables the script built them in."""

from __future__ import annotations

import pytest

from runner.importer.groups import Segment, flags, segments


def words(text: str) -> list[str]:
    return text.split()


def test_each_run_of_words_is_named_after_its_variable():
    variables = {
        "ckpt_args": "--load /a --save-interval 20 ",
        "perf_args": "--tensor-model-parallel-size 4 --sequence-parallel",
    }
    assert segments(
        words("--load /a --save-interval 20 --tensor-model-parallel-size 4 --sequence-parallel"), variables
    ) == [
        Segment("ckpt_args", (("load", ("/a",)), ("save-interval", ("20",)))),
        Segment("perf_args", (("tensor-model-parallel-size", ("4",)), ("sequence-parallel", ()))),
    ]


def test_concatenations_and_the_whole_launch_are_not_groups():
    variables = {
        "train_args": "--a 1 --b --c x y --d",
        "common_args": "--a 1 --b",
        "ckpt_args": "--a 1",
        "rollout_args": "--b",
        "tail_args": "--c x y",
    }
    found = segments(words("--a 1 --b --c x y --d"), variables)
    assert [(s.source, [name for name, _ in s.flags]) for s in found] == [
        ("ckpt_args", ["a"]),
        ("rollout_args", ["b"]),
        ("tail_args", ["c"]),
        ("", ["d"]),  # written inline
    ]


def test_a_variable_matches_whole_flags_only():
    # "--lr 1" must not claim the start of "--lr 1 2" (a flag with two values)
    found = segments(words("--lr 1 2 --x"), {"opt_args": "--lr 1"})
    assert found == [Segment("", (("lr", ("1", "2")), ("x", ())))]


def test_the_longest_variable_wins_and_equal_values_keep_the_first_name():
    found = segments(words("--a --b --c"), {"x_args": "--a", "y_args": "--a --b", "z_args": "--a --b"})
    assert [s.source for s in found] == ["y_args", ""]


def test_flags_need_a_flag_first():
    assert flags(["--spec", "m", "f", "--on"]) == [("spec", ("m", "f")), ("on", ())]
    with pytest.raises(ValueError, match="'x' comes before any flag"):
        flags(["x", "--y"])
