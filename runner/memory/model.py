"""model: a model's shape from its Megatron flags (MODEL_ARGS and the spec), and its parameters per GPU.

Parameters are counted module by module as megatron-core builds a GPT model (``GPTModel`` with the
transformer layer spec miles uses): embedding, each layer's norms, attention (standard with GQA, or
multi-latent), MLP (dense, or MoE: router, experts, shared expert), the final norm, the output layer
and the MTP block. A module's share of one GPU follows its parallel mode: column- and row-parallel
linears split over TP, experts over EP x ETP, norms, routers and MLA's down projections are
replicated. Megatron's defaults fill what the flags leave out (``megatron/training/arguments.py``).
A shape the flags do not describe (a hybrid Mamba model, latent experts) is ``Unknown``, never guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Flag = Callable[[str], Any]
_TERM = re.compile(r"\[\s*([01](?:\s*,\s*[01])*)\s*\](?:\s*\*\s*(\d{1,6}))?")
MAX_PATTERN = 100_000  # characters of a moe-layer-freq list read; a longer one is not counted


class Unknown(ValueError):
    """The flags do not describe the model well enough to count it: why, in words."""


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention's ranks and head sizes (DeepSeek's, GLM-5's)."""

    q_lora_rank: int  # 0: queries projected straight from the hidden state
    kv_lora_rank: int
    qk_head_dim: int
    qk_pos_emb_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class Indexer:
    """DeepSeek sparse attention's indexer (GLM-5, DeepSeek V3.2): its size is the checkpoint's."""

    heads: int
    head_dim: int
    source: str


@dataclass(frozen=True)
class Shape:
    """What counting needs of a model, Megatron's defaults filled in."""

    hidden: int
    layers: int
    vocab: int  # before padding
    vocab_multiple: int  # make-vocab-size-divisible-by
    heads: int
    query_groups: int
    head_dim: int  # kv-channels
    ffn_hidden: int
    gated: bool  # swiglu: gate and up projections
    untied: bool
    norm: int  # parameters of a norm per channel: 1 (RMSNorm), 2 (LayerNorm: weight and bias)
    qk_norm: bool
    linear_bias: bool
    qkv_bias: bool
    absolute_positions: int  # learned position embeddings' rows (0: rope or none)
    moe_pattern: tuple[bool, ...]  # per layer: MoE?
    experts: int
    moe_ffn_hidden: int
    shared_ffn_hidden: int
    shared_gate: bool
    topk: int
    mtp_layers: int
    mla: MLA | None
    indexer: Indexer | None
    plugin: str = ""  # a layer spec of miles' plugins whose layers are counted as megatron-core's are not

    def padded_vocab(self, tp: int) -> int:
        """``_vocab_size_with_padding``: a multiple of make-vocab-size-divisible-by x TP."""
        multiple = self.vocab_multiple * tp
        return math.ceil(self.vocab / multiple) * multiple


def shape(flag: Flag, indexer: Indexer | None = None) -> Shape:
    """The model ``flag`` (``--name`` -> value) describes; ``Unknown`` where it does not."""
    hidden, layers = positive(flag("hidden-size")), positive(flag("num-layers"))
    heads, vocab = positive(flag("num-attention-heads")), positive(flag("vocab-size"))
    missing = [
        n
        for n, v in (("hidden-size", hidden), ("num-layers", layers), ("num-attention-heads", heads))
        if not v
    ]
    if missing or not vocab:
        raise Unknown(f"MODEL_ARGS set no {(missing or ['vocab-size'])[0]}")
    if flag("custom-model-provider-path"):  # Inkling's: its attention and dense layers are config.json's
        raise Unknown(
            f"a custom model provider ({str(flag('custom-model-provider-path'))[:80]}) builds the model:"
            " its modules are that code's, not MODEL_ARGS'"
        )
    if flag("position-embedding-type") == "none" or flag("hybrid-override-pattern"):
        raise Unknown("a hybrid Mamba model: its layer pattern is the checkpoint's, not MODEL_ARGS'")
    if flag("moe-latent-size"):
        raise Unknown("experts in a latent space (moe-latent-size) are not counted")
    gated = bool(flag("swiglu"))
    experts = positive(flag("num-experts"))
    pattern = moe_pattern(flag("moe-layer-freq"), layers) if experts else (False,) * layers
    if pattern is None:
        raise Unknown(f"moe-layer-freq {str(flag('moe-layer-freq'))[:60]!r} is not a pattern read here")
    mla = _mla(flag) if flag("multi-latent-attention") else None
    groups = positive(flag("num-query-groups")) or 1 if flag("group-query-attention") else heads
    return Shape(
        hidden=hidden,
        layers=layers,
        vocab=vocab,
        vocab_multiple=positive(flag("make-vocab-size-divisible-by")) or 128,
        heads=heads,
        query_groups=groups,
        head_dim=positive(flag("kv-channels")) or hidden // heads,
        ffn_hidden=positive(flag("ffn-hidden-size")) or _default_ffn(hidden, gated),
        gated=gated,
        untied=bool(flag("untie-embeddings-and-output-weights")),
        norm=2 if (flag("normalization") or "LayerNorm") == "LayerNorm" else 1,
        qk_norm=bool(flag("qk-layernorm")),
        linear_bias=not flag("disable-bias-linear"),
        qkv_bias=bool(flag("add-qkv-bias")),
        absolute_positions=_absolute_positions(flag),
        moe_pattern=pattern,
        experts=experts,
        moe_ffn_hidden=positive(flag("moe-ffn-hidden-size")) or positive(flag("ffn-hidden-size")),
        shared_ffn_hidden=positive(flag("moe-shared-expert-intermediate-size")),
        shared_gate=bool(flag("moe-shared-expert-gate")),
        topk=positive(flag("moe-router-topk")) or 2,
        mtp_layers=positive(flag("mtp-num-layers")),
        mla=mla,
        indexer=indexer,
        plugin=_plugin(flag("spec")),
    )


# miles' layer specs whose modules megatron-core's GPT layer (with MLA, and DSA's indexer) counts as built
COUNTED_SPECS = ("miles_plugins.models.glm5.glm5", "miles_plugins.models.glm4")


def _plugin(spec: Any) -> str:
    """The module of a --spec whose layers differ from megatron-core's (gated delta-net, DeepSeek V4's
    compressed attention), or ""."""
    module = str(spec[0] if isinstance(spec, list | tuple) and spec else spec or "")
    return "" if not module or module in COUNTED_SPECS else module


def _mla(flag: Flag) -> MLA:
    def given(name: str, default: int) -> int:
        value = flag(name)
        return default if value is None else positive(value)

    return MLA(
        q_lora_rank=given("q-lora-rank", 0),
        kv_lora_rank=given("kv-lora-rank", 32),
        qk_head_dim=given("qk-head-dim", 128),
        qk_pos_emb_head_dim=given("qk-pos-emb-head-dim", 64),
        v_head_dim=given("v-head-dim", 128),
    )


def _default_ffn(hidden: int, gated: bool) -> int:
    """Megatron's ffn-hidden-size when unset: 4h, or 2/3 of it rounded down to 64 with swiglu."""
    return int(4 * hidden * 2 / 3 / 64) * 64 if gated else 4 * hidden


def _absolute_positions(flag: Flag) -> int:
    """Learned absolute position embeddings (Megatron's default type, unless
    --use-rotary-position-embeddings makes it rope) have max-position-embeddings rows; miles sets
    that to seq-length (4096 unless given)."""
    kind = (
        "rope"
        if flag("use-rotary-position-embeddings")
        else flag("position-embedding-type") or "learned_absolute"
    )
    if kind != "learned_absolute" or flag("no-position-embedding"):
        return 0
    return positive(flag("max-position-embeddings")) or positive(flag("seq-length")) or 4096


def moe_pattern(pattern: Any, layers: int) -> tuple[bool, ...] | None:
    """Which layers are MoE, by Megatron's --moe-layer-freq: an int N (every Nth, from the first;
    default 1) or a list's Python text (``[0]*3+[1]*75``); None for a text not read."""
    if pattern is None:
        pattern = 1
    if isinstance(pattern, int) and not isinstance(pattern, bool):
        return tuple(i % pattern == 0 for i in range(layers)) if pattern > 0 else None
    text = str(pattern).strip()
    if text.isdigit():
        return moe_pattern(int(text), layers)
    if len(text) > MAX_PATTERN:
        return None
    found = [_TERM.fullmatch(term.strip()) for term in text.split("+")]
    if not all(found):
        return None
    total = sum((m.group(1).count(",") + 1) * int(m.group(2) or 1) for m in found if m)
    if total != layers:
        return None  # Megatron refuses a list of another length
    flags: list[bool] = []
    for m in found:
        if m:
            flags += [bit.strip() == "1" for bit in m.group(1).split(",")] * int(m.group(2) or 1)
    return tuple(flags)


def positive(value: Any) -> int:
    if value is None or isinstance(value, bool):
        return 0
    try:
        number = int(str(value))
    except ValueError:
        return 0
    return max(number, 0)
