"""roundtrip: a cell that does not render what the script launches is caught, and said how."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import Location
from runner.importer import Request, capture, import_test
from runner.importer.knowledge import knowledge
from runner.importer.launch import Launched
from runner.importer.roundtrip import differences
from runner.importer.target import _model_args
from runner.importer.variants import explore
from runner.knowledge import bundled
from runner.launch.steps import tokens
from schemas.values import flag_tokens
from tests.conftest import DATA

SCRIPT = DATA / "import" / "test_glm5_744b_a40b_4layer.py"


@pytest.mark.allow_subprocess
def test_every_difference_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    import_test(Request(SCRIPT, tmp_path / "nv.yaml", hardware="h200"))
    cell = pipeline.cell(tmp_path / "nv.yaml")
    conventions = bundled.conventions()
    record = functools.partial(capture.record, SCRIPT, secrets=conventions.secrets)
    target = explore(SCRIPT, record, conventions, knowledge()).cells[0][1]
    assert differences(cell, target, None) == []

    words = list(target.launched.train_args)
    words[words.index("--lr") + 1] = "2e-6"
    launched = replace(
        target.launched,
        train_script="train_async.py",
        num_gpus_per_node=4,
        train_args=(*words, "--extra"),
        env={**target.launched.env, "NCCL_NVLS_ENABLE": "1", "SGLANG_NSA_FORCE_MLA": "0"},
    )
    assert differences(cell, replace(target, launched=launched), None) == [
        "train script: renders train.py, the script launches train_async.py",
        "--num-gpus: renders 8, the script gives 4",
        "train arg --lr: renders 1e-6, the script gives 2e-6",
        "train arg --extra: renders nothing, the script gives the switch",
        "env SGLANG_NSA_FORCE_MLA: renders '1', the script sets '0'",
    ]  # NCCL_NVLS_ENABLE is the node's probe: any recorded answer matches


def test_model_args_a_knob_of_the_model_script_changes_become_model_args_and_nothing_else():
    at = Location(Path("test_inkling_small_4layer_ci.py"), 66)
    conventions = bundled.conventions("31f1ca96")
    preset = bundled.load_preset("inkling-small", at, at.file, "31f1ca96")[0]
    words = list(tokens(preset))
    words[words.index("--num-layers") + 1] = "4"  # MODEL_ARGS_NUM_LAYERS=4
    four_layers = Launched("train.py", 8, None, tuple(words), (), {})
    assert _model_args(four_layers, "inkling-small", conventions, at) == {"num-layers": "4"}
    assert _model_args(Launched("train.py", 8, None, tokens(preset), (), {}), "inkling-small", conventions, at) == {}
    backwards = [t for name, v in reversed(preset.model_args.items()) for t in flag_tokens(name, v)]
    moved = Launched("train.py", 8, None, tuple(backwards), (), {})  # another order: the round trip says
    assert _model_args(moved, "inkling-small", conventions, at) == {}
    sourced = Launched("train.py", 8, "inkling-small", None, (), {})  # ${MODEL_ARGS[@]}: nothing to compare
    assert _model_args(sourced, "inkling-small", conventions, at) == {}
