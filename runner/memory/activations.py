"""activations: what Megatron's actor holds of a micro-batch's activations on one GPU of a stage.

Selective recompute with sequence parallel follows ``compute_activation_memory`` of Megatron-LM's
``megatron/training/theoretical_memory_usage.py``, everything else that file's
``compute_activation_memory_without_sp``; full recompute, which the file does not model, keeps a
checkpoint of each recomputed chunk's input and one chunk's working set. PP micro-batches are in
flight on the first stage (1F1B), the logits and their loss on the last.
"""

from __future__ import annotations

import math

from runner.memory.model import Shape
from runner.memory.params import Shard
from runner.memory.terms import Term, missing
from runner.memory.training import THEORETICAL, Recompute, Training


def activation_terms(shape: Shape, t: Training, shard: Shard) -> list[Term]:
    if t.tokens is None:
        return [missing("actor", "activations", t.tokens_from, THEORETICAL)]
    first, last = shard.stage == 0, shard.stage == t.split.pp - 1
    in_flight = t.split.pp - shard.stage  # 1F1B: the first stage holds PP micro-batches, the last one
    value, how = activations(shape, t, shard.layers, in_flight, first, last)
    return [
        Term(
            "actor",
            "activations",
            value,
            how,
            f"{t.tokens} tokens a micro-batch ({t.tokens_from}); {_mode(t)}",
        )
    ]


def _mode(t: Training) -> str:
    r = t.recompute
    kind = f"recompute {r.granularity}" + (f" {r.method} {r.layers}" if r.granularity == "full" else "")
    sequence = "on" if t.sequence_parallel else "off"
    return f"{kind if r.granularity else 'no recompute'}, sequence parallel {sequence}, TP {t.split.tp}"


def activations(
    shape: Shape, t: Training, layers: int, in_flight: int, first: bool, last: bool
) -> tuple[float, str]:
    """Bytes of activations on one GPU of a stage, and the formula's source."""
    assert t.tokens is not None
    tokens, h, tp, pp = t.tokens, shape.hidden, t.split.tp, t.split.pp
    selective_sp = t.sequence_parallel and t.recompute.granularity == "selective"
    full = t.recompute.granularity == "full"
    per_layer = (
        _layer_sp(shape, tokens) / tp
        if (selective_sp or (full and t.sequence_parallel))
        else _layer_no_sp(shape, tokens, tp)
    )
    if full:
        checkpoint = tokens * h * 2 / (tp if t.sequence_parallel else 1)  # a chunk's bf16 input
        stored, whole, working = _full_recompute(t.recompute, layers)
        body = (stored * checkpoint + whole * per_layer) * in_flight + working * per_layer
        source = (
            "run-matrix: full recompute (checkpointed chunk inputs + one chunk), per layer as " + THEORETICAL
        )
    else:
        body = per_layer * layers * in_flight
        source = f"{THEORETICAL}: " + (
            "compute_activation_memory" if selective_sp else "compute_activation_memory_without_sp"
        )
    if first:  # the embedding's input and dropout, PP micro-batches in flight
        body += (8 * tokens * pp + tokens * h * pp) / (tp if selective_sp else 1)
    if t.virtual_stages and pp > 1:
        body *= 1 + (pp - 1) / (pp * t.virtual_stages)
    if last:
        body += _output(shape, t, selective_sp)
    if not selective_sp and not full:
        body *= 1.05  # the file's allowance for the optimizer's temporaries
    return body, source


def _layer_sp(shape: Shape, tokens: int) -> float:
    """Table 2 of Korthikanti et al. (arXiv 2205.05198) as the file writes it: sbh(18 + 4 ffn / h);
    a MoE layer's MLP width is what a token passes through (top-k experts and the shared one)."""
    return tokens * shape.hidden * (18 + 4 * _width(shape) / shape.hidden)


def _layer_no_sp(shape: Shape, tokens: int, tp: int) -> float:
    return tokens * shape.hidden * (10 + 24 / tp)


def _width(shape: Shape) -> float:
    if not shape.experts or not any(shape.moe_pattern):
        return shape.ffn_hidden
    moe = sum(shape.moe_pattern) / len(shape.moe_pattern)
    routed = shape.topk * shape.moe_ffn_hidden + shape.shared_ffn_hidden
    return moe * routed + (1 - moe) * shape.ffn_hidden


def _full_recompute(r: Recompute, layers: int) -> tuple[int, int, int]:
    """Under --recompute-granularity full, per micro-batch: (chunk inputs stored, layers whose
    activations are stored whole, layers recomputed at once). uniform: every chunk of
    --recompute-num-layers layers keeps only its input; block: that many layers keep their input,
    the rest of the stage keeps everything."""
    if r.method == "block":
        recomputed = min(r.layers, layers)
        return recomputed, layers - recomputed, 1
    return math.ceil(layers / max(1, r.layers)), 0, min(r.layers, layers)


def _output(shape: Shape, t: Training, selective_sp: bool) -> float:
    """The output layer's input and the logits with their loss, on the last stage."""
    assert t.tokens is not None
    tokens, h, tp = t.tokens, shape.hidden, t.split.tp
    vocab = shape.padded_vocab(tp)
    if selective_sp:
        return tokens * h * 4 * (1 + vocab / h) / tp
    return (tokens * vocab / tp + tokens * h) * 2
