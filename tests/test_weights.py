"""The lower bound of a model's parameters from MODEL_ARGS, computed by hand for two models."""

from __future__ import annotations

import pytest
import yaml

from runner.check.weights import Weights, count
from runner.spec.locate import PRESETS

MAIN = PRESETS / "2026-08-21-31f1ca96"

# GLM-5 744B-A40B: hidden 6144, vocab 154880 (untied: embedding and output layer), 78 layers, the first
# 3 dense ([0]*3+[1]*75), swiglu (3 matrices an MLP), dense MLP 12288, 256 experts of 2048 and a shared
# expert of 2048 in each MoE layer, MLA attention of 64 heads with a value head of 256.
GLM5_EXPERTS = 75 * 256 * 3 * 6144 * 2048
GLM5_OTHER = 2 * 154880 * 6144 + 78 * 64 * 256 * 6144 + 75 * 3 * 6144 * 2048 + 3 * 3 * 6144 * 12288
# Qwen3-30B-A3B: hidden 2048, vocab 151936 untied, 48 layers all MoE, 128 experts of 768, swiglu, no
# shared expert, GQA of 32 heads x kv-channels 128.
QWEN3_EXPERTS = 48 * 128 * 3 * 2048 * 768
QWEN3_OTHER = 2 * 151936 * 2048 + 48 * 32 * 128 * 2048


def model_args(name: str) -> dict[str, object]:
    return yaml.safe_load((MAIN / f"{name}.yaml").read_text())["model_args"]


def test_two_models_counted_by_hand():
    assert (GLM5_EXPERTS, GLM5_OTHER) == (724_775_731_200, 13_265_534_976)  # 738.0 B of 744 B
    assert (QWEN3_EXPERTS, QWEN3_OTHER) == (28_991_029_248, 1_024_983_040)  # 30.0 B of 30.5 B
    assert count(model_args("glm5-744B-A40B").get) == Weights(GLM5_EXPERTS, GLM5_OTHER)
    assert count(model_args("qwen3-30B-A3B").get) == Weights(QWEN3_EXPERTS, QWEN3_OTHER)


def test_never_more_than_the_model_has():
    # the published sizes of models whose MODEL_ARGS describe every layer
    published = {"deepseek-v3": 671e9, "kimi-k2": 1.04e12, "qwen3-235B-A22B": 235e9, "qwen3-8B": 8.2e9}
    for name, size in published.items():
        counted = count(model_args(name).get)
        assert counted is not None and 0.85 * size < counted.total <= size, name


def test_a_model_whose_layers_model_args_do_not_describe_is_not_counted():
    # Nemotron-3: hybrid Mamba (its layer pattern comes from the checkpoint), latent experts
    assert count(model_args("nemotron-3-nano-30b-a3b").get) is None
    assert count(model_args("nemotron-3-super-120b-a12b").get) is None
    assert count({"num-layers": 4}.get) is None  # no hidden size


@pytest.mark.parametrize(
    ("pattern", "moe"),
    [
        (None, 4),
        (2, 2),
        ("[0]*3+[1]*1", 1),
        ("[1,0,1,0]", 2),
        ("[1]*2+[0, 1]", 3),
        ("[1]*5", None),
        ("x", None),
    ],
)
def test_moe_layer_freq_as_megatron_reads_it(pattern, moe):
    args = {
        "num-layers": 4,
        "hidden-size": 8,
        "num-experts": 2,
        "moe-ffn-hidden-size": 1,
        "moe-layer-freq": pattern,
    }
    counted = count(args.get)
    assert counted is not None
    # an expert is 2 matrices of 8 x 1 (no swiglu); a pattern not read counts no MLP at all
    assert counted.experts == (moe or 0) * 2 * 2 * 8
