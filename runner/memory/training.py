"""training: the settings the actor's memory depends on besides the model's shape, read from the flags
miles gives Megatron (``Training``): the parallel split, the dtypes of weights, grads and optimizer
state, offload, a micro-batch's tokens, sequence parallel and recompute.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.memory.model import positive
from runner.memory.params import Split

THEORETICAL = "megatron/training/theoretical_memory_usage.py"
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


@dataclass(frozen=True)
class Recompute:
    """Activation recomputation as the --recompute-* flags ask for it."""

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
