"""P8, P9: the model's weights against the GPU's memory (the profile's ``memory_gb``).

Each verdict compares a lower bound with an upper one, so it fires only where the cell clearly
cannot fit: the weights counted are those MODEL_ARGS surely describe (``runner.check.weights``), at the
fewest bytes a parameter can take there, spread as evenly as the parallel layout allows (the GPU
holding most holds at least the average); activations, the KV cache, gradients and optimizer
state are not counted. The memory is the profile's, sourced in its ``sources.machine``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import problem, rule
from runner.check.weights import count
from runner.errors import Problem, counted

BF16 = 2  # bytes a parameter: the checkpoints miles trains and serves are bf16
QUANTIZED = 0.5  # the fewest bytes of a quantized rollout checkpoint miles converts to (int4, nvfp4)
QUANTIZED_MARKS = ("fp8", "int4", "int8", "fp4", "w4a", "w8a", "awq", "gptq", "mxfp", "nvfp", "quant")
GB = 1e9  # memory_gb is the product page's GB


@rule("P8")
def rollout_weights_fit(cell: Cell, facts: Layout) -> Iterator[Problem]:
    weights = count(cell.flag)
    if weights is None or facts.train_only or not facts.rollout_gpus:
        return
    gpus = facts.engine.tp * facts.engine.pp  # every weight lives on one engine's tp x pp GPUs (S1)
    each = weights.total * _rollout_bytes(cell) / gpus / GB
    fraction = _fraction(cell.flag("sglang-mem-fraction-static"))
    budget = cell.profile.memory_gb * (fraction or 1.0)
    if each <= budget:
        return
    share = f" x sglang-mem-fraction-static {fraction} = {budget:.1f} GB" if fraction else " (all of it)"
    needed = math.ceil(weights.total * _rollout_bytes(cell) / GB / budget)
    yield problem(
        "P8",
        cell,
        ("rollout-num-gpus-per-engine", "sglang-pp-size", "sglang-mem-fraction-static"),
        f"a rollout engine's weights do not fit its GPUs: at least {_params(weights.total)} parameters"
        f" ({_model(cell)}) x {_bytes(cell)} / {counted(gpus, 'GPU')} of an engine (tp x pp)"
        f" = {each:.1f} GB per GPU,"
        f" more than SGLang's static memory on {cell.profile.name}: {cell.profile.memory_gb} GB{share}",
        f'SGLang stops at start ("Not enough memory"): give an engine at least {needed} GPUs'
        " (rollout-num-gpus-per-engine) or a quantized rollout checkpoint; the KV cache needs room too",
        severity="warning",
    )


@rule("P9")
def actor_weights_fit(cell: Cell, facts: Layout) -> Iterator[Problem]:
    weights = count(cell.flag)
    if (
        weights is None
        or cell.backend != "megatron"
        or cell.flag("debug-rollout-only")
        or not facts.actor.world
    ):
        return
    a = facts.actor
    each = (weights.other / (a.tp * a.pp) + weights.experts / (a.ep * a.etp * a.pp)) * BF16 / GB
    budget, share = _megatron_share(cell, facts)
    if each <= budget:
        return
    yield problem(
        "P9",
        cell,
        (
            "tensor-model-parallel-size",
            "pipeline-model-parallel-size",
            "expert-model-parallel-size",
            "expert-tensor-parallel-size",
        ),
        f"the actor's weights do not fit a GPU: at least {_params(weights.other)} parameters"
        f" / (TP {a.tp} x PP {a.pp}) + {_params(weights.experts)} expert parameters"
        f" / (EP {a.ep} x ETP {a.etp} x PP {a.pp}), x 2 bytes (bf16) = {each:.1f} GB per GPU"
        f" ({_model(cell)}), more than {share}",
        "Megatron runs out of memory at its first step: raise TP, PP or EP; gradients, optimizer state and"
        " activations need room too",
        severity="warning",
    )


def _megatron_share(cell: Cell, facts: Layout) -> tuple[float, str]:
    """Megatron's memory on a GPU: all of it, unless the engines share the GPU and stay in memory while
    it trains (colocated with --no-offload-rollout; miles offloads them by default when colocated)."""
    memory, name = cell.profile.memory_gb, cell.profile.name
    fraction = _fraction(cell.flag("sglang-mem-fraction-static"))
    kept = cell.flag("no-offload-rollout") is True or cell.flag("offload-rollout") is False
    if facts.colocate and kept and fraction:
        share = memory * (1 - fraction)
        return share, (
            f"what SGLang's engines leave on {name}: {memory} GB x (1 - sglang-mem-fraction-static"
            f" {fraction}) = {share:.1f} GB (colocated, --no-offload-rollout)"
        )
    return memory, f"{name}'s {memory} GB"


def _rollout_bytes(cell: Cell) -> float:
    """2 (bf16), or 0.5 where the rollout may load a quantized checkpoint (a flag or value says so)."""
    written = {**cell.preset.model_args, **cell.spec.args.flags()}
    words = " ".join(f"{name} {value}" for name, value in written.items()).lower()
    return QUANTIZED if any(mark in words for mark in QUANTIZED_MARKS) else BF16


def _bytes(cell: Cell) -> str:
    if _rollout_bytes(cell) == BF16:
        return "2 bytes (bf16; no flag names a quantized checkpoint)"
    return "0.5 bytes (the fewest of a quantized checkpoint: a flag names one)"


def _fraction(value: Any) -> float | None:
    try:
        fraction = float(str(value))
    except ValueError:
        return None
    return fraction if 0 < fraction < 1 else None


def _params(number: int) -> str:
    return f"{number / 1e9:.1f} B"


def _model(cell: Cell) -> str:
    return f"MODEL_ARGS of {cell.spec.model.type}" if cell.spec.model.type else "the spec's model flags"
