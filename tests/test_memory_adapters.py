"""runner.memory.params: LoRA's adapters on one GPU, at most, for two small models counted by hand."""

from __future__ import annotations

from runner.memory.model import shape
from runner.memory.params import Shard, Split, adapters

DENSE = {
    "hidden-size": 64,
    "num-layers": 2,
    "num-attention-heads": 4,
    "ffn-hidden-size": 128,
    "swiglu": True,
    "vocab-size": 1000,
}
MOE = {**DENSE, "num-experts": 8, "moe-ffn-hidden-size": 32, "moe-router-topk": 2}


def test_dense_every_linear_adapted():
    # rank 8 x (in + out) of qkv (64 -> 12 x 16 = 192), proj (64 -> 64), fc1 (64 -> 2 x 128), fc2 (128 -> 64)
    per_layer = 8 * ((64 + 192) + (64 + 64) + (64 + 256) + (128 + 64))
    assert per_layer == 7168
    assert adapters(shape(DENSE.get), 8, Shard(0, 2, 0.0, 0.0), Split()) == 2 * per_layer


def test_moe_adapts_each_routed_expert_over_ep():
    # attention 8 x 384 = 3072; each expert 8 x ((64 + 64) + (32 + 64)) = 1792, 8 experts / EP 2
    per_layer = 3072 + 8 / 2 * 1792
    assert adapters(shape(MOE.get), 8, Shard(0, 1, 0.0, 0.0), Split(pp=2, ep=2)) == per_layer
