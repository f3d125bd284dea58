"""runners.yaml: runner classes, every mistake with file:line and the item's key."""

from __future__ import annotations

import pytest

from runner.ci.runners import load_runners
from runner.errors import SpecError

HARDWARE = {"h200", "b200", "mi350x", "mi355x"}


def problems(write, text: str) -> list[str]:
    path = write("runners.yaml", text)
    with pytest.raises(SpecError) as caught:
        load_runners(path, HARDWARE)
    return [str(p) for p in caught.value.problems]


def test_runner_classes_load_with_labels_as_text_or_lists(write):
    path = write(
        "runners.yaml",
        """
        runners:
          - {label: [self-hosted, amd, mi350, 4gpu], hardware: mi350x, gpus: 4, count: 4, suites: [stage-c-4-gpu-mi350]}
          - label: h200-8gpu
            hardware: h200
            gpus: 8
            count: 2
        """,
    )
    share, host = load_runners(path, HARDWARE)
    assert (share.name, share.label, share.gpus, share.count, share.suites) == (
        "self-hosted,amd,mi350,4gpu", ["self-hosted", "amd", "mi350", "4gpu"], 4, 4, ["stage-c-4-gpu-mi350"]
    )
    assert (host.name, host.hardware, host.suites) == ("h200-8gpu", "h200", [])


def test_a_runner_label_is_github_label_safe_and_gpus_an_integer(write):
    assert problems(
        write,
        """
        runners:
          - {label: "a\\nb", hardware: h200, gpus: 8, count: 1}
          - {label: ["self-hosted", "${{ github.token }}"], hardware: h200, gpus: true, count: 1}
        """,
    ) == [
        "runners.yaml:2: error [type] runners[0].label: Value error, a CI label is letters, digits, '.', '_' and"
        " '-', starting with a letter or digit (it goes into GitHub's runs-on and the workflow's matrix as it"
        " is), got 'a\\nb'",
        "runners.yaml:3: error [type] runners[1].label: Value error, a CI label is letters, digits, '.', '_' and"
        " '-', starting with a letter or digit (it goes into GitHub's runs-on and the workflow's matrix as it"
        " is), got ['self-hosted', '${{ github.token }}']",
        "runners.yaml:3: error [type] runners[1].gpus: Input should be a valid integer, got True",
    ]


def test_each_mistake_names_its_line_and_item(write):
    assert problems(
        write,
        """
        runners:
          - {label: a, hardware: h200, gpus: 8, count: 1}
          - label: b
            hardware: h200
            gpus: 0
            cont: 2
        colour: blue
        """,
    ) == [
        "runners.yaml:7: error [unknown-key] colour: unknown key 'colour'\n  ==> expected one of: runners",
        "runners.yaml:5: error [type] runners[1].gpus: Input should be greater than or equal to 1, got 0",
        "runners.yaml:3: error [missing-key] runners[1].count: 'count' is required",
        "runners.yaml:6: error [unknown-key] runners[1].cont: unknown key 'cont'\n  ==> did you mean 'count'?",
    ]


def test_unknown_hardware_and_one_label_twice(write):
    assert problems(
        write,
        """
        runners:
          - {label: a, hardware: h200, gpus: 8, count: 1}
          - {label: b, hardware: mi350, gpus: 4, count: 2}
          - {label: a, hardware: b200, gpus: 8, count: 1}
        """,
    ) == [
        "runners.yaml:3: error [unknown-name] runners[1].hardware: no hardware profile named 'mi350' "
        "(known: b200, h200, mi350x, mi355x)\n  ==> did you mean 'mi350x'?",
        "runners.yaml:4: error [duplicate-key] runners[2].label: runner classes 0 and 2 have one label 'a'\n"
        "  ==> also at runners.yaml:2\n  ==> runs-on cannot tell them apart: give each class its own label",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("runners: 3\n", "runners.yaml:1: error [type] runners: 'runners' must be a list of runner classes: "
                         "{label, hardware, gpus, count}"),
        ("runners: []\n", "runners.yaml:1: error [type] runners: 'runners' must be a list of runner classes: "
                          "{label, hardware, gpus, count}"),
        ("{}\n", "runners.yaml:1: error [missing-key] runners: 'runners' must be a list of runner classes: "
                 "{label, hardware, gpus, count}"),
        ("runners:\n  - just-a-label\n", "runners.yaml:2: error [type] runners[0]: a runner class is a mapping "
                                       "{label, hardware, gpus, count}, got 'just-a-label'"),
        ("runners:\n  - {label: a, hardware: h200, gpus: 8, count: 1001}\n",
         "runners.yaml:2: error [type] runners[0].count: Input should be less than or equal to 1000, got 1001"),
        ("runners:\n  - {label: '', hardware: h200, gpus: 8, count: 1}\n",
         "runners.yaml:2: error [type] runners[0].label: String should have at least 1 character, got ''"),
        ("runners: [{label: a, label: b}]\n", "runners.yaml:1: error [duplicate-key] runners.label: key 'label' "
                                              "is written twice in one mapping"),
    ],
)
def test_bad_files(write, text, message):
    assert problems(write, text)[0].split("\n  ==>")[0] == message


def test_the_runners_of_all_classes_have_a_budget(write):
    classes = "".join(f"  - {{label: r{i}, hardware: h200, gpus: 8, count: 1000}}\n" for i in range(11))
    assert problems(write, "runners:\n" + classes) == [
        "runners.yaml:1: error [budget] runners: 11,000 runners in all; a plan spreads cells over at most 10,000\n"
        "  ==> count the runners a CI really has"
    ]


@pytest.mark.parametrize("kind", ["runners", "ci-plan"])
def test_checked_in_schema_is_current(kind):
    import json

    from schemas.jsonschema import schema
    from tests.conftest import ROOT

    path = ROOT / "schemas" / f"{kind}.schema.json"
    assert json.loads(path.read_text()) == schema(kind), f"stale: run-matrix schema {kind} > {path}"


def test_an_alias_bomb_is_refused_by_the_loader_s_budget(write):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    (found,) = problems(write, bomb + "runners: *i\n")
    assert found.startswith("runners.yaml:") and "error [budget]" in found and "200,000 values" in found
