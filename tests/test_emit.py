"""emit: imported values read back exactly as the script launched them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.spec.emit import Text, dump, flag_value, scalar
from runner.spec.load import DELETE, loads
from schemas.values import flag_tokens


@pytest.mark.parametrize(
    ("token", "written"),
    [
        ("8", "8"),
        ("0.70", "0.70"),
        ("1e-6", "1e-6"),
        ("true", "'true'"),  # a string, not a switch
        ("null", "'null'"),
        ("[0]*3+[1]*1", "'[0]*3+[1]*1'"),
        ("#x", "'#x'"),
        ("it's", "it's"),
        ("a: b", "'a: b'"),
        ("${WANDB_API_KEY}", "$${WANDB_API_KEY}"),  # a shell reference, never resolved by run-matrix
    ],
)
def test_flag_values_render_as_the_script_wrote_them(token, written):
    assert scalar(Text(token)) == written
    loaded = loads(f"v: {written}\n", Path("x.yaml")).data["v"]
    assert flag_tokens("f", loaded) == ["--f", token.replace("${", "$${")]


def test_env_values_stay_text():
    assert [scalar(v) for v in ("1", "0,1,2,3", "", "yes")] == ["'1'", "0,1,2,3", "''", "'yes'"]


def test_flags_as_a_spec_writes_them():
    assert flag_value(()) is True
    assert flag_value(("4",)) == Text("4")
    assert flag_value(("m", "f")) == [Text("m"), Text("f")]


def test_a_document_with_lists_deletes_matches_and_comments():
    text = dump(
        {
            "matrix": {"adjust": {"x": {"match": {"fp8_rollout": True}}}},
            "args": {
                "misc": {
                    "spec": [Text("m.glm5"), Text("get_spec")],
                    "block-size": [Text("128"), Text("128")],
                    "colocate": DELETE,
                }
            },
        },
        {("args", "misc", "spec"): "from misc_args"},
        ["header"],
    )
    assert text == (
        "# header\n"
        "matrix:\n"
        "  adjust:\n"
        "    x:\n"
        "      match: {fp8_rollout: true}\n"
        "\n"
        "args:\n"
        "  misc:\n"
        "    # from misc_args\n"
        "    spec: [m.glm5, get_spec]\n"
        "    block-size: [128, 128]\n"
        "    colocate: !delete\n"
    )


def test_a_checks_arguments_read_back_as_given_nested_lists_mappings_and_null_included():
    args = {
        "diff_thresholds": [[".*", "rel <= 0.0085"], ["a: b", "it's"]],
        "groups": [{"rank": 0, "skip": None}, []],
        "phase_subdir": None,
        "atol": 1e-08,
        "on": [True, "true", 1, "1"],
    }
    text = dump({"verify": {"c": {"call": "m.f", "args": args}}})
    assert loads(text, Path("s.yaml")).data["verify"]["c"]["args"] == args
    assert "      phase_subdir: null\n" in text and "      atol: 1.0e-08\n" in text


def test_a_long_list_of_mappings_is_a_block_of_items_and_reads_back():
    hook = {
        "call": "tests/e2e/ft/conftest_ft/fault_injection.py:spawn_fault_injector",
        "args": {"seed": 42, "mean_interval_seconds": 120.0},
        "stop": {"call": "stop_and_join", "args": {"timeout_seconds": 5}},
    }
    data = {"launch": {"script": "train.py", "before_submit": [hook, {"call": "t.py:other"}]}}
    text = dump(data)
    assert text.splitlines()[2:6] == [
        "  before_submit:",
        "    - call: tests/e2e/ft/conftest_ft/fault_injection.py:spawn_fault_injector",
        "      args:",
        "        seed: 42",
    ]
    assert "    - call: t.py:other" in text.splitlines()
    assert loads(text, Path("spec.yaml")).data == data
    short = {"launch": {"before_submit": [{"call": "t.py:f"}]}}
    assert dump(short) == "launch:\n  before_submit: [{call: t.py:f}]\n"  # one line while it fits


def test_a_header_line_that_holds_line_breaks_stays_a_comment():
    header = ["left out: x.py: its last output:\nERROR x.py\n  + where", "", "case: y.py"]
    text = dump({"a": 1}, None, header)
    assert text.splitlines()[:5] == [
        "# left out: x.py: its last output:",
        "# ERROR x.py",
        "#   + where",
        "#",
        "# case: y.py",
    ]
    assert loads(text, Path("x.yaml")).data == {"a": 1}
