"""actor: what Megatron's training actor holds on its most loaded GPU.

Weights, main gradients and optimizer state follow ``compute_weight_and_optimizer_memory`` of
Megatron-LM's ``megatron/training/theoretical_memory_usage.py`` (bf16 weights, fp32 main grads,
Adam's fp32 master weights and two moments: 18 bytes a parameter, or 6 + 12 / DP with the
distributed optimizer), extended where that file stops: experts counted apart and their state
sharded over the expert-data-parallel group, the data-parallel group with CP, the dtypes of
``--use-precision-aware-optimizer``, ``--optimizer-cpu-offload``. The activations are
``runner.memory.activations``', the settings both read ``runner.memory.training``.
"""

from __future__ import annotations

from runner.memory.activations import activation_terms
from runner.memory.model import Shape
from runner.memory.params import Shard, adapters, shards
from runner.memory.terms import Term
from runner.memory.training import THEORETICAL, Training


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
