"""runner.memory: parameters per GPU against published counts, SGLang's KV bytes and default
fraction worked out by hand, the estimate's phases and explain --memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from runner import pipeline
from runner.cells.layout import layout
from runner.memory import engine, kv
from runner.memory.estimate import estimate
from runner.memory.model import Unknown, moe_pattern, shape
from runner.memory.params import Split, shards, total
from runner.memory.terms import GIB

PRESETS = Path(__file__).parent.parent / "miles" / "models" / "2026-08-21-31f1ca96"


def preset(name: str) -> dict:
    return yaml.safe_load((PRESETS / f"{name}.yaml").read_text())["model_args"]


@pytest.mark.parametrize(
    ("name", "published"),
    [  # the parameter counts of the checkpoints' safetensors (vocabularies need no padding here)
        ("qwen3-30B-A3B", 30_532_122_624),
        ("qwen3-8B", 8_190_735_360),
        ("llama3.1-8B-Instruct", 8_030_261_248),
    ],
)
def test_a_model_has_its_published_parameters(name, published):
    assert total(shape(preset(name).get)) == published


def test_experts_split_over_ep_and_the_rest_over_tp():
    qwen = shape(preset("qwen3-30B-A3B").get)
    (whole,) = shards(qwen, Split())
    (split,) = shards(qwen, Split(tp=4, ep=8, etp=1))
    assert split.experts * 8 == whole.experts  # 48 layers x 128 experts x 3 x 2048 x 768 / 8
    assert whole.experts == 48 * 128 * 3 * 2048 * 768
    # the router (128 x 2048) and the four norms a layer (2048, 2048, 128, 128) are replicated
    replicated = 48 * (128 * 2048 + 2 * 2048 + 2 * 128) + 2048
    padding = 2 * 128 * 2048  # 151,936 rows pad to a multiple of 128 x TP 4: 152,064 (embedding and output)
    assert split.dense == (whole.dense - replicated + padding) / 4 + replicated


def test_pipeline_stages_place_embedding_and_output():
    qwen = shape(preset("qwen3-8B").get)
    first, last = shards(qwen, Split(pp=2))
    vocab = 151936 * 4096
    assert (first.layers, last.layers) == (18, 18)
    assert first.total - vocab == pytest.approx(last.total - vocab - 4096)  # the final norm
    uneven = shards(qwen, Split(pp=4, first_stage_layers=6, last_stage_layers=6))
    assert [s.layers for s in uneven] == [6, 12, 12, 6]


def test_moe_layer_freq_as_megatron_reads_it():
    assert moe_pattern("[0]*3+[1]*2", 5) == (False, False, False, True, True)
    assert moe_pattern(2, 4) == (True, False, True, False)
    assert moe_pattern("[0]*3+[1]*2", 6) is None  # Megatron refuses a list of another length
    assert moe_pattern("__import__('os')", 5) is None


def test_what_the_flags_do_not_describe_is_unknown():
    with pytest.raises(Unknown, match="hybrid Mamba"):
        shape(preset("nemotron-3-nano-30b-a3b").get)
    with pytest.raises(Unknown, match="MODEL_ARGS set no hidden-size"):
        shape({"num-layers": 2}.get)


def test_kv_bytes_a_token():
    qwen = shape(preset("qwen3-30B-A3B").get)  # 4 KV heads of 128, 48 layers
    assert kv.cell(qwen, attention_tp=1, pp=1, dtype_bytes=2).bytes == 4 * 128 * 48 * 2 * 2
    assert kv.cell(qwen, attention_tp=8, pp=1, dtype_bytes=2).bytes == 1 * 128 * 48 * 2 * 2  # replicated
    deepseek = shape(preset("deepseek-v3").get)  # MLA: latent 512 + rope 64, 61 layers
    assert kv.cell(deepseek, attention_tp=8, pp=1, dtype_bytes=1).bytes == (512 + 64) * 61
    assert kv.kv_dtype_bytes("fp8_e4m3") == 1 and kv.kv_dtype_bytes("int3") is None


def test_sglang_default_fraction():
    # H100 80 GB, TP 1: 512 + 8192 x 1.5 + 256 x 2 + 1024 / 8 = 13,440 MB reserved of 81,920
    assert engine.default_fraction(80, tp=1, pp=1, dp=1, dp_attention=False, mla=False) == 0.836
    # a small GPU: 512 + 2048 x 1.5 + 8 x 2... below 35 GB: 24 graphs; no 10 GB floor under 60 GB
    assert engine.default_fraction(24, tp=1, pp=1, dp=1, dp_attention=False, mla=False) == round(
        (24 * 1024 - (512 + 2048 * 1.5 + 24 * 2 + 128)) / (24 * 1024), 3
    )


def test_colocated_phases_of_the_shipped_glm5_test():
    cell = pipeline.one("nv/glm5-colocate.yaml")
    found = estimate(cell, layout(cell))
    assert [p.name for p in found.phases] == ["rollout", "training", "weight update"]
    assert found.level == "full" and found.heaviest is not None and found.heaviest.name == "rollout"
    training = found.phases[1]
    held = {t.name: t.holder for t in training.terms}
    assert held["optimizer state"] == "actor" and "KV cache pool" not in held  # the engine is offloaded
    assert all(t.source for t in training.terms)
    assert found.heaviest.estimate <= found.memory == 141 * GIB


def test_explain_memory(cli):
    result = cli("explain", "nv/glm5-colocate.yaml", "--memory")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == (
        "nv/glm5-colocate on h200: 141.0 GB a GPU (the profile's memory_gb), colocated: the actor and an"
        " engine share every GPU"
    )
    assert lines[1] == "model: MODEL_ARGS of glm5-744B-A40B_4layer; estimated: full"
    assert any(line.startswith("training: 35.2 GB of 141.0, margin 105.8 GB") for line in lines)
    data = json.loads(cli("explain", "nv/glm5-colocate.yaml", "--memory", "--format", "json").out)
    assert (data["level"], data["memory_gb"], data["problems"]) == ("full", 141.0, [])
    terms = {t["name"]: t for t in data["phases"][1]["terms"]}
    assert terms["weights"]["source"].startswith("megatron/training/theoretical_memory_usage.py")
    assert terms["weights"]["lower_bound"] is True and terms["fragmentation"]["lower_bound"] is False
