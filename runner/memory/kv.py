"""kv: SGLang's KV cache, per token: the bytes one token's cache takes on one GPU of an engine.

As SGLang's ``ModelRunner`` sizes its pool (``profile_max_num_token``, in
``sglang/srt/model_executor/model_runner_kv_cache_mixin.py`` in 0.5.16 and ``model_runner.py``
in 0.5.10): standard attention keeps a key and a value per KV head on the GPU (a head is
replicated where attention TP exceeds the KV heads: ``ModelConfig.get_num_kv_heads``) per layer of
the engine's pipeline stage; multi-latent attention keeps one compressed latent and the rope key
per layer, replicated over attention TP; DeepSeek sparse attention adds its indexer's key, in fp8
with a 4-byte scale per 128 values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from runner.memory.model import Shape

# bytes of one cached value by --kv-cache-dtype ("auto": the model's dtype, bf16 in miles)
KV_DTYPE_BYTES = {
    "auto": 2.0,
    "bfloat16": 2.0,
    "float16": 2.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "fp4_e2m1": 0.5,
}
INDEXER_SCALE_BLOCK = 128  # values of the indexer's fp8 key per 4-byte scale


@dataclass(frozen=True)
class Cell:
    """One token's KV cache on one GPU of an engine."""

    bytes: float
    formula: str  # in words, with the numbers

    def tokens(self, pool_bytes: float) -> int:
        return max(0, int(pool_bytes // self.bytes)) if self.bytes else 0


def kv_dtype_bytes(kv_cache_dtype: str | None) -> float | None:
    """Bytes per cached value, or None for a --kv-cache-dtype not known here."""
    return KV_DTYPE_BYTES.get(kv_cache_dtype or "auto")


def cell(shape: Shape, attention_tp: int, pp: int, dtype_bytes: float) -> Cell:
    """The bytes of one token's cache on one GPU: ``attention_tp`` is the engine's TP over its
    attention DP (``tp / dp`` with DP-attention), ``pp`` its pipeline stages."""
    layers = math.ceil(shape.layers / pp)
    if shape.mla is not None:
        latent = shape.mla.kv_lora_rank + shape.mla.qk_pos_emb_head_dim
        size = latent * layers * dtype_bytes
        latent_of = f"kv_lora_rank {shape.mla.kv_lora_rank} + rope {shape.mla.qk_pos_emb_head_dim}"
        text = f"({latent_of}) x {layers} layers x {dtype_bytes:g} B"
        if shape.indexer is not None:
            index = shape.indexer.head_dim + shape.indexer.head_dim // INDEXER_SCALE_BLOCK * 4
            size += index * layers
            text += f" + indexer key ({shape.indexer.head_dim} fp8 + scales) x {layers} layers"
        return Cell(size, text)
    heads = max(1, shape.query_groups // attention_tp)
    size = heads * shape.head_dim * layers * 2 * dtype_bytes
    return Cell(
        size, f"{heads} KV heads x head dim {shape.head_dim} x {layers} layers x 2 (K, V) x {dtype_bytes:g} B"
    )
