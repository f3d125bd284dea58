"""params: a model's parameters on one GPU, per pipeline stage, as megatron-core shards them.

Each module is counted as ``GPTModel`` builds it and split by its parallel mode: column- and
row-parallel linears over TP (a row-parallel bias is replicated), routed experts over EP x ETP,
norms, the router and MLA's down projections replicated. The first stage holds the embedding, the
last the final norm, the output layer (its own copy when tied and PP > 1) and the MTP block (with
its own copy of the embedding when PP > 1), as
``megatron/core/models/gpt/gpt_model.py`` and ``transformer_block.py`` place them.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.memory.model import Shape


@dataclass(frozen=True)
class Split:
    """How the actor's parameters are split: Megatron's TP, PP, EP and ETP."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    etp: int = 1
    first_stage_layers: int = 0  # --decoder-first-pipeline-num-layers (0: an even split)
    last_stage_layers: int = 0  # --decoder-last-pipeline-num-layers


@dataclass(frozen=True)
class Shard:
    """The parameters on one GPU of a pipeline stage."""

    stage: int
    layers: int
    dense: float  # all but the routed experts: over TP, or replicated
    experts: float  # the routed experts: over EP x ETP

    @property
    def total(self) -> float:
        return self.dense + self.experts


def stage_layers(layers: int, split: Split) -> list[int]:
    """The transformer layers of each stage (Megatron's split: the first and last stages may be
    given their counts, the others share the rest evenly)."""
    if split.pp == 1:
        return [layers]
    first, last = split.first_stage_layers, split.last_stage_layers
    middle = split.pp - (1 if first else 0) - (1 if last else 0)
    rest = layers - first - last
    even = rest // middle if middle else 0
    counts = [even] * split.pp
    if first:
        counts[0] = first
    if last:
        counts[-1] = last
    return counts


def shards(shape: Shape, split: Split) -> list[Shard]:
    """One GPU's parameters of each pipeline stage."""
    found, start = [], 0
    for stage, count in enumerate(stage_layers(shape.layers, split)):
        dense = experts = 0.0
        kinds = shape.moe_pattern[start : start + count]
        moe_layers = sum(kinds)
        for moe, how_many in ((False, len(kinds) - moe_layers), (True, moe_layers)):  # each kind once
            if how_many:
                d, e = layer(shape, moe, split)
                dense, experts = dense + how_many * d, experts + how_many * e
        start += count
        if stage == 0:
            dense += embedding(shape, split.tp)
        if stage == split.pp - 1:
            dense += shape.norm * shape.hidden  # the final norm
            if shape.untied or split.pp > 1:
                dense += shape.padded_vocab(split.tp) * shape.hidden / split.tp  # the output layer
            d, e = mtp(shape, split)
            dense, experts = dense + d, experts + e
        found.append(Shard(stage, count, dense, experts))
    return found


def embedding(shape: Shape, tp: int) -> float:
    """The word embedding over TP (vocab-parallel), and learned positions (replicated)."""
    return shape.padded_vocab(tp) * shape.hidden / tp + shape.absolute_positions * shape.hidden


def layer(shape: Shape, moe: bool, split: Split) -> tuple[float, float]:
    """(dense, experts) parameters of one transformer layer on one GPU."""
    h, tp = shape.hidden, split.tp
    norms = 2 * shape.norm * h  # input_layernorm, pre_mlp_layernorm
    dense = norms + attention(shape, tp)
    if not moe:
        return dense + mlp(shape, shape.ffn_hidden, tp), 0.0
    dense += shape.experts * h  # the router, replicated
    if shape.shared_ffn_hidden:
        dense += mlp(shape, shape.shared_ffn_hidden, tp) + (h if shape.shared_gate else 0)
    per_expert = mlp_weights(shape, shape.moe_ffn_hidden)
    return dense, shape.experts / split.ep * per_expert / split.etp


def attention(shape: Shape, tp: int) -> float:
    h = shape.hidden
    if shape.mla is not None:
        return _mla(shape, tp) + _indexer(shape)
    n, g, d = shape.heads, shape.query_groups, shape.head_dim
    qkv = h * (n + 2 * g) * d / tp
    if shape.linear_bias or shape.qkv_bias:
        qkv += (n + 2 * g) * d / tp
    proj = n * d * h / tp + (h if shape.linear_bias else 0)
    return qkv + proj + (2 * shape.norm * d if shape.qk_norm else 0)


def _mla(shape: Shape, tp: int) -> float:
    """Multi-latent attention: the down projections and their norms are replicated, the up
    projections and the output projection split over TP."""
    assert shape.mla is not None
    m, h, n = shape.mla, shape.hidden, shape.heads
    q_head = m.qk_head_dim + m.qk_pos_emb_head_dim
    q: float
    if m.q_lora_rank:
        q = h * m.q_lora_rank + shape.norm * m.q_lora_rank + m.q_lora_rank * n * q_head / tp
    else:
        q = h * n * q_head / tp
    kv: float = h * (m.kv_lora_rank + m.qk_pos_emb_head_dim) + shape.norm * m.kv_lora_rank
    kv += m.kv_lora_rank * n * (m.qk_head_dim + m.v_head_dim) / tp
    return q + kv + n * m.v_head_dim * h / tp


def _indexer(shape: Shape) -> float:
    """DSA's indexer, replicated: its query (from the q latent) and key projections, the key's
    LayerNorm and the per-head weights."""
    if shape.indexer is None or shape.mla is None:
        return 0.0
    i, h = shape.indexer, shape.hidden
    return shape.mla.q_lora_rank * i.heads * i.head_dim + h * i.head_dim + 2 * i.head_dim + h * i.heads


def mlp_weights(shape: Shape, width: int) -> float:
    """fc1 (gate and up with swiglu) and fc2 of one MLP, whole."""
    return shape.hidden * width * (3 if shape.gated else 2)


def mlp(shape: Shape, width: int, tp: int) -> float:
    """A dense MLP over TP: fc1 column-parallel, fc2 row-parallel (its bias replicated)."""
    bias = (width * (2 if shape.gated else 1) / tp + shape.hidden) if shape.linear_bias else 0.0
    return mlp_weights(shape, width) / tp + bias


def mtp(shape: Shape, split: Split) -> tuple[float, float]:
    """The MTP block on the last stage: per layer two norms, the eh projection (column-parallel),
    a transformer layer like the model's last, and its final norm; the output layer is shared.
    MTP embeds the shifted tokens, so a last stage that is not the first builds its own copy of
    the embedding (``GPTModel``: ``if self.pre_process or self.mtp_process``)."""
    if not shape.mtp_layers:
        return 0.0, 0.0
    h = shape.hidden
    d, e = layer(shape, shape.moe_pattern[-1], split)
    own = 3 * shape.norm * h + 2 * h * h / split.tp
    copy = embedding(shape, split.tp) if split.pp > 1 else 0.0
    return shape.mtp_layers * (d + own) + copy, shape.mtp_layers * e


def total(shape: Shape) -> float:
    """Every parameter of the model, once (no split)."""
    return sum(s.total for s in shards(shape, Split()))


def adapters(shape: Shape, rank: int, shard: Shard, split: Split) -> float:
    """LoRA adapters on one GPU of a stage, at most: every linear of a layer given one (Megatron-Bridge's
    LoRA: ``linear_in`` rank x in, ``linear_out`` out x rank; routed experts one each, miles' default,
    over EP), counted whole on each GPU and for the heavier kind of layer; the MTP block's on the last
    stage. ``--target-modules`` picks some of these: an upper bound, never under."""
    per_layer = max(_adapted(shape, moe, rank, split.ep) for moe in set(shape.moe_pattern))
    total = shard.layers * per_layer
    if shard.stage == split.pp - 1 and shape.mtp_layers:
        eh_proj = rank * (2 * shape.hidden + shape.hidden)
        total += shape.mtp_layers * (_adapted(shape, shape.moe_pattern[-1], rank, split.ep) + eh_proj)
    return float(total)


def _adapted(shape: Shape, moe: bool, rank: int, ep: int) -> float:
    """Adapter parameters of one layer with every linear adapted (rank x (in + out) each)."""
    linears = _attention_linears(shape)
    gated = 2 if shape.gated else 1
    if not moe:
        linears += [(shape.hidden, shape.ffn_hidden * gated), (shape.ffn_hidden, shape.hidden)]
        return float(rank * sum(i + o for i, o in linears))
    expert = rank * (shape.hidden + shape.moe_ffn_hidden * gated + shape.moe_ffn_hidden + shape.hidden)
    if shape.shared_ffn_hidden:
        width = shape.shared_ffn_hidden
        linears += [(shape.hidden, width * gated), (width, shape.hidden)]
    return rank * sum(i + o for i, o in linears) + shape.experts / max(1, ep) * expert


def _attention_linears(shape: Shape) -> list[tuple[int, int]]:
    """(in, out) of each linear of a layer's attention."""
    h, n = shape.hidden, shape.heads
    m = shape.mla
    if m is None:
        d, g = shape.head_dim, shape.query_groups
        return [(h, (n + 2 * g) * d), (n * d, h)]
    q_head = m.qk_head_dim + m.qk_pos_emb_head_dim
    q = [(h, m.q_lora_rank), (m.q_lora_rank, n * q_head)] if m.q_lora_rank else [(h, n * q_head)]
    kv = [(h, m.kv_lora_rank + m.qk_pos_emb_head_dim), (m.kv_lora_rank, n * (m.qk_head_dim + m.v_head_dim))]
    found = q + kv + [(n * m.v_head_dim, h)]
    if shape.indexer is not None:  # wq_b, wk, weights_proj
        i = shape.indexer
        found += [(m.q_lora_rank, i.heads * i.head_dim), (h, i.head_dim), (h, i.heads)]
    return found
