"""kv: SGLang's KV cache, per token: the bytes one token's cache takes on one GPU of an engine.

As SGLang sizes its pool (0.5.10: ``ModelRunnerKVCacheMixin.get_cell_size_per_token`` in
``sglang/srt/model_executor/model_runner_kv_cache_mixin.py``; 0.5.16:
``DefaultPoolConfigurator._compute_cell_size`` in ``sglang/srt/model_executor/pool_configurator.py``):
standard attention keeps a key and a value per KV head on the GPU (a head is replicated where attention
TP exceeds the KV heads: ``ModelConfig.get_num_kv_heads``) per layer of the engine's pipeline stage (the
stage with the most layers: SGLang's ``get_pp_indices`` gives the extra layers to the last stages, and the
pool is the smallest over the stages); multi-latent attention keeps one compressed latent and the rope key
per layer, replicated over attention TP; DeepSeek sparse attention adds its indexer's key, in fp8 with a
4-byte scale per 128 values. fp4 (fp4_e2m1, which 0.5.10 takes and 0.5.16 refuses for its nvfp4 and
fp4_mx_block16) packs two values a byte and adds a one-byte scale per 16 values (for standard
attention: of the keys' width, for K and V).

What the pool then allocates can exceed the cell: SGLang's DSA pool stores an fp8 latent with its scales
and the rope key in bf16 (``calculate_mla_kv_cache_dim``, with DSA backends other than trtllm:
512 + 16 + 128 = 656 bytes a layer for GLM-5 in fp8, where the cell counts 576); the token count follows
the cell, as here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from runner.memory.model import Shape

# bytes of one cached value by --kv-cache-dtype ("auto": the model's dtype, bf16 in miles)
KV_DTYPE_BYTES = {
    "auto": 2.0,
    "bfloat16": 2.0,
    "bf16": 2.0,
    "float16": 2.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "fp4_e2m1": 0.5,
}
INDEXER_SCALE_BLOCK = 128  # values of the indexer's fp8 key per 4-byte scale
FP4_SCALE_BLOCK = 16  # values of an fp4 cache per one-byte scale


@dataclass(frozen=True)
class Cell:
    """One token's KV cache on one GPU of an engine."""

    bytes: float
    formula: str  # in words, with the numbers

    def tokens(self, pool_bytes: float) -> int:
        return max(0, int(pool_bytes // self.bytes)) if self.bytes else 0


def kv_cache_dtype(given: str | None, sparse_attention: bool, capability: tuple[int, int]) -> str:
    """--kv-cache-dtype as SGLang's ServerArgs settles it: a DeepSeek-sparse-attention model's "auto" is
    fp8_e4m3 from compute capability 10 (Blackwell) up, bfloat16 below (0.5.10's
    ``ServerArgs._set_default_nsa_kv_cache_dtype``, 0.5.16's ``arg_groups/overrides.py``
    ``_dsa_kv_cache_dtype_default``); any other stays as given."""
    given = given or "auto"
    if sparse_attention and given in ("auto", "bf16"):
        return "fp8_e4m3" if given == "auto" and capability[0] >= 10 else "bfloat16"
    return given


def kv_dtype_bytes(kv_cache_dtype: str | None) -> float | None:
    """Bytes per cached value, or None for a --kv-cache-dtype not known here."""
    return KV_DTYPE_BYTES.get(kv_cache_dtype or "auto")


def cell(shape: Shape, attention_tp: int, pp: int, dtype_bytes: float) -> Cell:
    """The bytes of one token's cache on one GPU: ``attention_tp`` is the engine's TP over its
    attention DP (``tp / dp`` with DP-attention), ``pp`` its pipeline stages."""
    layers = math.ceil(shape.layers / pp)
    if shape.mla is not None:
        return _latent(shape, layers, dtype_bytes)
    heads = max(1, shape.query_groups // attention_tp)
    size = heads * shape.head_dim * layers * 2 * dtype_bytes
    text = f"{heads} KV heads x head dim {shape.head_dim} x {layers} layers x 2 (K, V) x {dtype_bytes:g} B"
    if dtype_bytes < 1:  # fp4: one-byte scales
        size += heads * shape.head_dim * layers * 2 // FP4_SCALE_BLOCK
        text += f" + a 1-byte scale per {FP4_SCALE_BLOCK} values"
    return Cell(size, text)


def _latent(shape: Shape, layers: int, dtype_bytes: float) -> Cell:
    assert shape.mla is not None
    latent = shape.mla.kv_lora_rank + shape.mla.qk_pos_emb_head_dim
    size = latent * layers * dtype_bytes
    text = (
        f"(kv_lora_rank {shape.mla.kv_lora_rank} + rope {shape.mla.qk_pos_emb_head_dim})"
        f" x {layers} layers x {dtype_bytes:g} B"
    )
    if dtype_bytes < 1:  # fp4: one-byte scales
        size += latent // FP4_SCALE_BLOCK * layers
        text += f" + a 1-byte scale per {FP4_SCALE_BLOCK} values"
    if shape.indexer is not None:
        index = shape.indexer.head_dim + shape.indexer.head_dim // INDEXER_SCALE_BLOCK * 4
        size += index * layers
        text += f" + indexer key ({shape.indexer.head_dim} fp8 + scales) x {layers} layers"
    return Cell(size, text)


def pool_tokens(
    cell: Cell, free_gib: float, after_load_gib: float, fraction: float, page_size: int = 1
) -> int:
    """The tokens of SGLang's KV pool on one GPU (0.5.10's ``profile_max_num_token`` and
    ``_resolve_token_capacity``, 0.5.16's ``KVCacheConfigurator._profile_available_bytes`` and
    ``DefaultPoolConfigurator.calculate_pool_sizes``): the memory free after the weights loaded, less the
    share 1 - mem_fraction_static of the memory free before that SGLang leaves to activations and graphs,
    over the cell, down to whole pages. Memory in GiB, as SGLang reads it."""
    rest = after_load_gib - free_gib * (1 - fraction)
    if rest <= 0 or not cell.bytes:
        return 0
    return int(int(rest * (1 << 30)) // cell.bytes) // page_size * page_size
