"""miles/launchers.yaml is the one description of a launcher: the spec's model, render, the L rules,
the import and diff read it, so a launcher added to (a copy of) the file changes what they do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.cli.render import add_parser
from runner.diff.layout import layout_differences
from runner.errors import Location, SpecError
from runner.importer.target import _script
from runner.importer.traced import Call, Run
from runner.knowledge import launchers
from runner.launch.render import Context, render
from schemas.jsonschema import schema
from schemas.spec import Launch

MATRICES = pipeline.locate.BUNDLED_MATRICES
ROCM = MATRICES / "rocm" / "glm5-async.yaml"
NV = MATRICES / "nv" / "glm5-colocate.yaml"
ROOT = Path(__file__).parents[1]
# a launcher the shipped file lacks: sync, runs with --colocate, ignores one flag the ROCm spec sets
# and crashes on another
FANCY = """\
  train_fancy.py:
    mode: sync
    colocate: true
    ignores: [sglang-disable-custom-all-reduce]
    crashes:
      optimizer-cpu-offload: fails its first step
"""


@pytest.fixture
def fancy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped launchers and train_fancy.py, in a copy the knowledge module reads instead."""
    copy = tmp_path / "launchers.yaml"
    copy.write_text(launchers.LAUNCHERS.read_text() + FANCY)
    monkeypatch.setattr(launchers, "LAUNCHERS", copy)
    return copy


def l_rules(cell: pipeline.Cell) -> list[str]:
    return [f"{p.rule}: {p.message} ==> {p.hint}" for p in check.run(cell) if p.rule.startswith("L")]


def test_the_shipped_launchers_are_those_the_specs_and_rules_rely_on() -> None:
    shipped = launchers.shipped().launchers
    assert (shipped["train.py"].mode, shipped["train.py"].colocate) == ("sync", True)
    assert (shipped["train_async.py"].mode, shipped["train_async.py"].colocate) == ("async", False)
    assert pipeline.cell(NV).launcher == shipped["train.py"]
    assert pipeline.cell(ROCM).launcher == shipped["train_async.py"]


def test_the_checked_in_schema_and_render_help_list_the_shipped_launchers() -> None:
    scripts = list(launchers.shipped().scripts)
    checked_in = json.loads((ROOT / "schemas" / "spec.schema.json").read_text())
    assert checked_in["$defs"]["Launch"]["properties"]["script"]["enum"] == scripts
    parser = _render_parser()
    assert f"python3 <miles>/{'|'.join(scripts)} " in parser.description


def test_a_launcher_added_to_the_data_is_accepted_and_rendered(fancy: Path, write) -> None:
    cell = pipeline.cell(write("spec.yaml", f"extends: {ROCM}\nlaunch:\n  script: train_fancy.py\n"))
    submit = render(cell, Context(miles_root="/src/miles")).commands[-1].argv
    assert submit[submit.index("--") + 1 :][:2] == ("python3", "/src/miles/train_fancy.py")
    assert "python3 <miles>/train.py|train_async.py|train_fancy.py " in _render_parser().description
    generated = schema("spec", launchers.shipped())["$defs"]["Launch"]["properties"]["script"]
    assert generated["enum"] == ["train.py", "train_async.py", "train_fancy.py"]
    assert generated["description"] == (
        "train.py (sync; the only one with --colocate), train_async.py or train_fancy.py"
    )


def test_a_launcher_added_to_the_data_changes_the_rules(fancy: Path, write) -> None:
    cell = pipeline.cell(write("spec.yaml", f"extends: {ROCM}\nlaunch:\n  script: train_fancy.py\n"))
    assert l_rules(cell) == [
        "L9: --sglang-disable-custom-all-reduce has no effect under train_fancy.py; only train.py or"
        " train_async.py honour it ==> delete it, or use launch.script: train.py or train_async.py",
        "L10: --optimizer-cpu-offload under train_fancy.py fails its first step ==> delete it in sync mode",
    ]
    colocated = pipeline.cell(write("nv.yaml", f"extends: {NV}\nlaunch:\n  script: train_fancy.py\n"))
    assert l_rules(colocated) == []  # it runs with --colocate
    refused = pipeline.cell(
        write(
            "async.yaml",
            f"extends: {NV}\nlaunch:\n  script: train_async.py\n"
            "args:\n  misc:\n    disable-weights-backuper: !delete\n",
        )
    )
    assert l_rules(refused) == [
        'L2: train_async.py rejects --colocate: "Colocation is not supported for async training."'
        " ==> use launch.script: train.py or train_fancy.py, or delete --colocate and give the engines"
        " --rollout-num-gpus"
    ]


def test_a_launcher_added_to_the_data_changes_the_diff_and_the_import(fancy: Path, write) -> None:
    cell = pipeline.cell(write("spec.yaml", f"extends: {ROCM}\nlaunch:\n  script: train_fancy.py\n"))
    modes = [(d.a, d.b) for d in layout_differences(pipeline.cell(ROCM), cell) if d.key == "mode"]
    assert modes == [("async", "sync")]
    assert _script(_call("/src/miles/train_fancy.py"), _run("/src/miles"), launchers.shipped()) == (
        "train_fancy.py"
    )


def test_a_script_no_launcher_names_is_refused_as_before(fancy: Path, write) -> None:
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", f"extends: {ROCM}\nlaunch:\n  script: train_sync.py\n"))
    assert str(caught.value) == (
        "spec.yaml:3: error [type] launch.script: Input should be 'train.py', 'train_async.py' or"
        " 'train_fancy.py', got 'train_sync.py'"
    )
    with pytest.raises(SpecError) as caught:
        _script(_call("/src/miles/train_sync.py"), _run("/src/miles"), launchers.shipped())
    assert (
        "launches /src/miles/train_sync.py; a spec launches train.py, train_async.py or train_fancy.py"
        in str(caught.value)
    )


def test_a_spec_validated_without_the_launchers_is_the_callers_bug() -> None:
    with pytest.raises(TypeError, match=r"context=\{'launchers': Launchers\}"):
        Launch.model_validate({"script": "train.py"})
    assert Launch.model_validate(
        {"script": "train.py"}, context={"launchers": launchers.shipped()}
    ).script == ("train.py")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "launchers:\n  train.py:\n    mode: fast\n    colocate: true\n",
            "launchers.yaml:3: error [type] launchers.train.py.mode: Input should be 'sync' or 'async', got 'fast'",
        ),
        (
            "launchers:\n  train_x.py:\n    mode: sync\n    colocate: false\n",
            "launchers.yaml:2: error [type] launchers.train_x.py: give colocate_refusal (miles' words) exactly"
            " when colocate is false: rule L2 quotes it",
        ),
        (
            "launchers:\n  ../evil.py:\n    mode: sync\n    colocate: true\n",
            "launchers.yaml:2: error [type] launchers.../evil.py: '../evil.py' is no script of the checkout's"
            " top folder (NAME.py)",
        ),
        (
            "launchers:\n  train.py:\n    mode: sync\n    colocat: true\n",
            "launchers.yaml:4: error [unknown-key] launchers.train.py.colocat: unknown key 'colocat'\n"
            "  ==> did you mean 'colocate'?",
        ),
        (
            "launchers:\n  train.py:\n    mode: sync\n    colocate: true\n    ignores: [--seed]\n",
            "launchers.yaml:5: error [type] launchers.train.py.ignores: '--seed' is not a flag name: write it"
            " without the leading --, e.g. 'tensor-model-parallel-size'",
        ),
        (
            "launchers: {}\n",
            "launchers.yaml:1: error [type] launchers: name at least one launcher: a spec's launch.script must"
            " be one of them",
        ),
    ],
)
def test_bad_data_is_refused_at_its_line(tmp_path: Path, monkeypatch, text: str, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "launchers.yaml").write_text(text)
    with pytest.raises(SpecError) as caught:
        launchers.read(tmp_path / "launchers.yaml")
    assert str(caught.value) == expected


def _render_parser():
    import argparse

    subcommands = argparse.ArgumentParser().add_subparsers()
    add_parser(subcommands, "render", "")
    return subcommands.choices["render"]


def _call(train_script: str) -> Call:
    return Call({"train_script": train_script}, (), {}, "execute", {}, Location(Path("test_x.py"), 1))


def _run(root: str) -> Run:
    return Run({}, (), (), (), (), {}, root)
