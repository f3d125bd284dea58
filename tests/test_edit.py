"""runner.spec.edit: keys set in a spec's text in place; everything else kept byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.spec import load
from runner.spec.edit import edited

PATH = Path("spec.yaml")
BAND = {"rel_up": 0.45, "abs_floor_up": 0.0, "rel_down": 0.45, "abs_floor_down": 0.0}
SPEC = """\
# the GLM-5 async test on MI355X
extends: ../base/glm5.yaml   # the shared part

expect:
  # step time: a band, judged on the last step
  perf/step_time:
    band:
      rel_up: 0.5
      rel_down: 0.5
    steps: last
  train/ppo_kl: {max: 0.1}   # miles' own bound

why:
  expect.train/ppo_kl: miles' test asserts it
"""


def _errors(text: str, edits) -> str:
    with pytest.raises(SpecError) as found:
        edited(text, PATH, edits)
    return str(found.value)


def test_a_band_replaces_the_old_one_and_its_reason_joins_the_why_and_nothing_else_moves():
    found = edited(
        SPEC,
        PATH,
        [
            (("expect", "perf/step_time", "band"), BAND),
            (("why", "expect.perf/step_time.band"), "history recommend: 3 trusted runs, mean 26"),
        ],
    )
    assert (
        found
        == SPEC.replace(
            "    band:\n      rel_up: 0.5\n      rel_down: 0.5\n",
            "    band: {rel_up: 0.45, abs_floor_up: 0.0, rel_down: 0.45, abs_floor_down: 0.0}\n",
        )
        + "  expect.perf/step_time.band: 'history recommend: 3 trusted runs, mean 26'\n"
    )


def test_a_key_joins_a_flow_mapping_before_its_brace_and_its_comment_stays():
    found = edited(SPEC, PATH, [(("expect", "train/ppo_kl", "band"), {"rel_up": 1.0})])
    assert "  train/ppo_kl: {max: 0.1, band: {rel_up: 1.0}}   # miles' own bound\n" in found


def test_missing_mappings_are_written_as_blocks_at_the_end_of_their_parent():
    found = edited("hardware: h200  # the node\n", PATH, [(("expect", "m: a#b", "band"), {"rel_up": 1.0})])
    assert found == "hardware: h200  # the node\nexpect:\n  'm: a#b':\n    band: {rel_up: 1.0}\n"
    assert load.loads(found, PATH).data["expect"] == {"m: a#b": {"band": {"rel_up": 1.0}}}
    assert edited("", PATH, [(("why", "x"), "y")]) == "why:\n  x: y\n"


def test_a_key_after_a_block_scalar_keeps_the_scalar_whole():
    text = "expect:\n  m: |\n    two\n    lines\n\n# the end\n"
    found = edited(text, PATH, [(("expect", "n"), 1)])
    assert load.loads(found, PATH).data["expect"] == {"m": "two\nlines\n", "n": 1}
    assert found.endswith("\n# the end\n")


def test_an_anchor_shared_by_an_alias_is_refused_at_the_alias_line():
    text = "base: &gate {max: 1}\nexpect:\n  m: *gate\n"
    assert _errors(text, [(("expect", "m", "band"), BAND)]) == (
        "spec.yaml:3: error [edit] expect.m: it is an anchor used elsewhere (&/*): an edit would change both: "
        "cannot edit it in place"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "expect: [m]\n",
            "spec.yaml:1: error [edit] expect: it is a list, not a mapping: cannot edit it in place",
        ),
        (
            "expect:\n  m: 3\n",
            "spec.yaml:2: error [edit] expect.m: it is a single value, not a mapping: cannot edit it in place",
        ),
        (
            "expect: {m: {max: 1, }}\n",  # a trailing comma: the splice would write ", ,"
            "spec.yaml:1: error [edit] expect.m.band: it would not read back as written: cannot edit it in place",
        ),
    ],
)
def test_a_spec_the_edit_cannot_reach_is_refused_with_file_line_and_key(text, message):
    assert _errors(text, [(("expect", "m", "band"), BAND)]) == message


def test_a_spec_that_does_not_load_is_refused_as_every_command_refuses_it():
    assert "duplicate" in _errors("a: 1\na: 2\n", [(("a",), 3)]).lower()
