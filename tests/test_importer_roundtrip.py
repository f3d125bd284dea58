"""roundtrip: a cell that does not render what the script launches is caught, and said how."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from runner import pipeline
from runner.importer import Request, capture, import_test
from runner.importer.knowledge import knowledge
from runner.importer.roundtrip import differences
from runner.importer.variants import explore
from tests.conftest import DATA

SCRIPT = DATA / "import" / "test_glm5_744b_a40b_4layer.py"


@pytest.mark.allow_subprocess
def test_every_difference_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    import_test(Request(SCRIPT, tmp_path / "nv.yaml", hardware="h200"))
    cell = pipeline.cell(tmp_path / "nv.yaml")
    conventions = pipeline.conventions()
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
