"""weights: a lower bound on a model's parameters, from its MODEL_ARGS alone. Pure.

Only weights every such model surely has are counted: the input embedding and (untied) output
layer, each layer's MLP — dense (``ffn-hidden-size``) or MoE (``num-experts`` x
``moe-ffn-hidden-size``, plus the shared expert) as ``moe-layer-freq`` says — and each layer's
attention output projection (heads x value head dim x hidden). The query/key/value projections,
norms, routers and DSA indexers are left out, so the count is never above the truth: GLM-5
744B-A40B counts 738.0 B, Qwen3-30B-A3B 30.0 B. Experts are counted apart: Megatron and SGLang
shard them over EP, the rest over TP.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_TERM = re.compile(r"\[\s*([01](?:\s*,\s*[01])*)\s*\](?:\s*\*\s*(\d{1,6}))?")
MAX_PATTERN = 100_000  # characters of a moe-layer-freq list read; a longer one is not counted


@dataclass(frozen=True)
class Weights:
    """Parameters, at least: the experts' and everything else's."""

    experts: int
    other: int

    @property
    def total(self) -> int:
        return self.experts + self.other


def count(flag: Callable[[str], Any]) -> Weights | None:
    """The lower bound for the model ``flag`` (``--name`` -> value) describes; None without
    ``hidden-size`` and ``num-layers``, the two every count needs."""
    hidden, layers = _positive(flag("hidden-size")), _positive(flag("num-layers"))
    if not hidden or not layers or not describes_every_layer(flag):
        return None
    vocab = _positive(flag("vocab-size"))
    embeddings = vocab * hidden * (2 if flag("untie-embeddings-and-output-weights") else 1)
    heads = _positive(flag("num-attention-heads"))
    head_dim = _positive(flag("v-head-dim") if flag("multi-latent-attention") else flag("kv-channels"))
    attention_out = heads * (head_dim or (hidden // heads if heads else 0)) * hidden
    matrices = 3 if flag("swiglu") else 2  # gate, up and down projections; 2 without a gate
    experts = _positive(flag("num-experts"))
    moe_layers = _moe_layers(flag("moe-layer-freq"), layers) if experts else 0
    if moe_layers is None:  # a pattern not read: count each layer's MLP as neither
        moe_layers, dense_layers = 0, 0
    else:
        dense_layers = layers - moe_layers
    expert = matrices * hidden * _positive(flag("moe-ffn-hidden-size") or flag("ffn-hidden-size"))
    shared = matrices * hidden * _positive(flag("moe-shared-expert-intermediate-size"))
    dense = matrices * hidden * _positive(flag("ffn-hidden-size"))
    return Weights(
        experts=moe_layers * experts * expert,
        other=embeddings + layers * attention_out + moe_layers * shared + dense_layers * dense,
    )


def describes_every_layer(flag: Callable[[str], Any]) -> bool:
    """Whether MODEL_ARGS say what every layer holds. Not for a hybrid Mamba model (Nemotron-3: no
    position embedding, its layer pattern comes from the checkpoint, so most of its layers have no
    MLP), nor for experts in a latent space (``moe-latent-size``): counted as above, those would
    count more than the model has."""
    return flag("position-embedding-type") != "none" and not flag("moe-latent-size")


def _moe_layers(pattern: Any, layers: int) -> int | None:
    """How many layers are MoE: Megatron's --moe-layer-freq, an int N (every Nth layer, from the
    first; default 1) or a list's Python text (``[0]*3+[1]*75``); None for a text not read."""
    if pattern is None:
        pattern = 1
    if isinstance(pattern, int) and not isinstance(pattern, bool):
        return len(range(0, layers, pattern)) if pattern > 0 else None
    text = str(pattern).strip()
    if text.isdigit():
        return _moe_layers(int(text), layers)
    if len(text) > MAX_PATTERN:
        return None
    terms = [term.strip() for term in text.split("+")]
    found = [_TERM.fullmatch(term) for term in terms]
    if not all(found):
        return None
    ones = sum(m.group(1).count("1") * int(m.group(2) or 1) for m in found if m)
    total = sum((m.group(1).count(",") + 1) * int(m.group(2) or 1) for m in found if m)
    return ones if total == layers else None  # Megatron refuses a list of another length


def _positive(value: Any) -> int:
    if value is None or isinstance(value, bool):
        return 0
    try:
        number = int(str(value))
    except ValueError:
        return 0
    return max(number, 0)
