"""actor: what Megatron's training actor holds on its most loaded GPU.

Weights, main gradients and optimizer state follow ``compute_weight_and_optimizer_memory`` of
Megatron-LM's ``megatron/training/theoretical_memory_usage.py`` (bf16 weights, fp32 main grads,
Adam's fp32 master weights and two moments: 18 bytes a parameter, or 6 + 12 / DP with the
distributed optimizer), extended where that file stops: experts counted apart and their state
sharded over the expert-data-parallel group, the data-parallel group with CP, the dtypes of
``--use-precision-aware-optimizer``, ``--optimizer-cpu-offload``. Activations follow the same file's
``compute_activation_memory`` (selective recompute with sequence parallel) and
``compute_activation_memory_without_sp`` (everything else), and add full recompute, which that file
does not model: a checkpoint of each recomputed chunk's input, and one chunk's working set.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from runner.memory.model import Shape, positive
from runner.memory.params import Shard, Split, adapters, shards
from runner.memory.terms import Term, missing

THEORETICAL = "megatron/training/theoretical_memory_usage.py"
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


@dataclass(frozen=True)
class Recompute:
    granularity: str | None  # "full", "selective" or None
    method: str | None  # "uniform" or "block" (full only)
    layers: int  # --recompute-num-layers


@dataclass(frozen=True)
class Training:
    """What the actor's memory depends on besides the model's shape."""

    split: Split
    world: int
    cp: int
    distributed_optimizer: bool
    grad_bytes: float
    master_bytes: float
    moment_bytes: tuple[float, float]  # exp_avg, exp_avg_sq
    cpu_offload: float  # the fraction of optimizer state kept on the CPU
    tokens: int | None  # a micro-batch's tokens on one GPU
    tokens_from: str  # how the tokens were found, in words
    sequence_parallel: bool
    recompute: Recompute
    virtual_stages: int | None
    lora_rank: int  # --lora-rank (0: no LoRA)

    @property
    def dp(self) -> int:
        """The group the distributed optimizer shards over: data parallel with context parallel."""
        return max(1, self.world // (self.split.tp * self.split.pp))

    @property
    def expert_dp(self) -> int:
        return max(1, self.world // (self.split.ep * self.split.etp * self.split.pp))

    @property
    def optimizer_bytes(self) -> float:
        return self.master_bytes + sum(self.moment_bytes)


def training(flag: Callable[[str], Any], split: Split, world: int, cp: int) -> Training:
    """The training settings miles gives Megatron: bf16 and, for Adam, the distributed optimizer
    (miles' ``set_default_megatron_args``); Megatron's dtype defaults otherwise."""
    precise = bool(flag("use-precision-aware-optimizer"))

    def dtype(name: str, default: str) -> float:
        return DTYPE_BYTES.get(str(flag(name) or default), 4.0) if precise else DTYPE_BYTES[default]

    grads = 2.0 if flag("grad-reduce-in-bf16") else dtype("main-grads-dtype", "fp32")
    optimizer = str(flag("optimizer") or "adam").lower()
    moments = (
        (dtype("exp-avg-dtype", "fp32"), dtype("exp-avg-sq-dtype", "fp32"))
        if optimizer == "adam"
        else (4.0, 0.0)
    )
    tokens, how = _tokens(flag, cp)
    offload = flag("optimizer-offload-fraction")
    return Training(
        split=split,
        world=world,
        cp=cp,
        distributed_optimizer=optimizer == "adam",
        grad_bytes=grads,
        master_bytes=dtype("main-params-dtype", "fp32"),
        moment_bytes=moments,
        cpu_offload=(float(offload) if offload is not None else 1.0)
        if flag("optimizer-cpu-offload")
        else 0.0,
        tokens=tokens,
        tokens_from=how,
        sequence_parallel=bool(flag("sequence-parallel")) and split.tp > 1,
        recompute=Recompute(
            flag("recompute-granularity"),
            flag("recompute-method"),
            positive(flag("recompute-num-layers")) or 1,
        ),
        virtual_stages=_virtual_stages(flag, split.pp),
        lora_rank=positive(flag("lora-rank")),
    )


def _tokens(flag: Callable[[str], Any], cp: int) -> tuple[int | None, str]:
    """A micro-batch's tokens on one GPU: --max-tokens-per-gpu with dynamic batching (already per
    CP rank, as miles' help says), else micro-batch-size x (prompt + response) / CP."""
    if flag("use-dynamic-batch-size") and positive(flag("max-tokens-per-gpu")):
        return positive(flag("max-tokens-per-gpu")), f"max-tokens-per-gpu {flag('max-tokens-per-gpu')}"
    response = positive(flag("rollout-max-response-len"))
    if not response:
        return None, "neither --max-tokens-per-gpu (dynamic batch) nor --rollout-max-response-len is set"
    prompt = positive(flag("rollout-max-prompt-len"))
    batch = positive(flag("micro-batch-size")) or 1
    tokens = math.ceil(batch * (prompt + response) / cp)
    said = (
        f"micro-batch-size {batch} x (rollout-max-prompt-len {prompt or 'unset: 0'}"
        f" + rollout-max-response-len {response}) / CP {cp}"
    )
    return tokens, said


def _virtual_stages(flag: Callable[[str], Any], pp: int) -> int | None:
    given = positive(flag("virtual-pipeline-model-parallel-size"))
    per_stage = positive(flag("num-layers-per-virtual-pipeline-stage"))
    if given:
        return given
    layers = positive(flag("num-layers"))
    return layers // (pp * per_stage) if per_stage and layers else None


def state_terms(shape: Shape, shard: Shard, t: Training) -> list[Term]:
    """Weights, main grads and optimizer state of one stage's GPU (with LoRA: the frozen weights, and
    the adapters with their grads and state)."""
    params = shard.total
    where = f"{params / 1e9:.2f} B parameters on this GPU (stage {shard.stage}: {shard.layers} layers)"
    found = [
        Term(
            "actor",
            "weights",
            params * 2.0,
            f"{THEORETICAL}: compute_weight_and_optimizer_memory",
            f"{where} x 2 B (bf16)",
            lower=True,
        )
    ]
    if t.lora_rank:
        found.append(_adapter_term(shape, shard, t))
        return found
    grads_inputs = f"{params / 1e9:.2f} B x {t.grad_bytes:g} B (main grads)"
    found.append(
        Term(
            "actor",
            "gradients",
            params * t.grad_bytes,
            f"{THEORETICAL}: compute_weight_and_optimizer_memory",
            grads_inputs,
            lower=True,
        )
    )
    dense_share = t.dp if t.distributed_optimizer else 1
    expert_share = t.expert_dp if t.distributed_optimizer else 1
    state = (shard.dense / dense_share + shard.experts / expert_share) * t.optimizer_bytes
    kept = state * (1 - t.cpu_offload)
    sharding = (
        f"/ DP x CP {dense_share} (experts / expert DP {expert_share}), distributed optimizer"
        if t.distributed_optimizer
        else "(not sharded: no distributed optimizer)"
    )
    share = "all" if t.cpu_offload == 1 else f"{t.cpu_offload:g}"
    offload = f", {share} of it on the CPU (--optimizer-cpu-offload)" if t.cpu_offload else ""
    found.append(
        Term(
            "actor",
            "optimizer state",
            kept,
            f"{THEORETICAL}: compute_weight_and_optimizer_memory",
            f"{t.optimizer_bytes:g} B a parameter (master weights and Adam moments) {sharding}{offload}",
            lower=True,
        )
    )
    return found


def _adapter_term(shape: Shape, shard: Shard, t: Training) -> Term:
    """LoRA's adapters: bf16 weights, main grads and optimizer state (sharded over DP by the distributed
    optimizer); the frozen base has neither grads nor state (miles: DDP buffers only the adapters)."""
    params = adapters(shape, t.lora_rank, shard, t.split)
    share = t.dp if t.distributed_optimizer else 1
    per_param = 2.0 + t.grad_bytes + t.optimizer_bytes / share
    return Term(
        "actor",
        "gradients and optimizer state",
        params * per_param,
        "run-matrix: LoRA adapters, at most (every linear adapted); bytes as "
        + f"{THEORETICAL}: compute_weight_and_optimizer_memory",
        f"{params / 1e6:.1f} M adapter parameters at most (lora-rank {t.lora_rank}) x (2 + {t.grad_bytes:g}"
        f" + {t.optimizer_bytes:g} / {share}) B",
    )


def heaviest(shape: Shape, t: Training) -> tuple[Shard, list[Term]]:
    """The stage whose GPU holds most, with its terms (weights to activations)."""
    best: tuple[Shard, list[Term]] | None = None
    for shard in shards(shape, t.split):  # every stage: an uneven split can load a middle one most
        terms = state_terms(shape, shard, t) + activation_terms(shape, t, shard)
        if best is None or sum(x.bytes or 0 for x in terms) > sum(x.bytes or 0 for x in best[1]):
            best = shard, terms
    assert best is not None
    return best


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


def with_split(t: Training, **sizes: int) -> Training:
    """The same training with other parallel sizes (the re-fit's and the hints' candidates)."""
    return replace(t, split=replace(t.split, **sizes))
