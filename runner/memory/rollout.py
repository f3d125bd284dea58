"""rollout: an engine's settings as miles starts it, read from a cell (``engine.Rollout``).

The rollout checkpoint's bytes a parameter come from its config.json's ``quantization_config`` when
it was read, else from what the flags name (a checkpoint path or option saying fp8, int4, nvfp4, ...);
a quantization named but not known is not estimated (its weights count at their fewest bytes in
the lower bound).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.memory import engine, kv
from runner.memory.model import Shape, positive

BF16 = 2.0
# bytes a parameter by what names the quantization (a flag's value, config.json's quant_method), in order
QUANTIZED = (
    *(("nvfp4", 0.5), ("mxfp4", 0.5), ("fp4", 0.5), ("int4", 0.5), ("w4a", 0.5), ("awq", 0.5), ("gptq", 0.5)),
    *(("mxfp8", 1.0), ("fp8", 1.0), ("int8", 1.0), ("w8a", 1.0)),
)
FEWEST = 0.5
MARKS = ("quant", "compressed-tensors")  # a quantization named, kind not said


def rollout(cell: Cell, flag: Callable[[str], Any], facts: Layout, shape: Shape) -> engine.Rollout:
    """The engines' settings; ``flag`` reads the cell's flags (or a candidate's)."""
    e = facts.engine
    given = _fraction(flag("sglang-mem-fraction-static"))
    default = engine.default_fraction(
        cell.profile.memory_gb, e.tp, e.pp, e.dp, e.dp_attention, shape.mla is not None
    )
    if given is None:
        fraction, fraction_from = default, "SGLang's default for this GPU and TP"
    else:
        fraction, fraction_from = given, "--sglang-mem-fraction-static"
    weight, lower, weight_from = weight_bytes(cell)
    given_dtype = flag("sglang-kv-cache-dtype")
    kv_dtype = kv.kv_cache_dtype(
        str(given_dtype) if given_dtype else None,
        cell.preset.sparse_attention,
        cell.profile.compute_capability,
    )
    group, asked, demand = _demand(flag, facts)
    return engine.Rollout(
        tp=e.tp,
        dp=e.dp,
        ep=e.ep,
        pp=e.pp,
        dp_attention=e.dp_attention,
        fraction=fraction,
        fraction_from=fraction_from,
        default_fraction=default,
        weight_bytes=weight,
        weight_lower=lower,
        weight_from=weight_from,
        kv_bytes=kv.kv_dtype_bytes(kv_dtype),
        kv_dtype=kv_dtype,
        group_tokens=group,
        asked_tokens=asked,
        demand_from=demand,
    )


def weight_bytes(cell: Cell) -> tuple[float | None, float, str]:
    """(bytes a parameter, at least, what says so) of the checkpoint the engines load."""
    config = (cell.hf_config or {}).get("quantization_config")
    if isinstance(config, dict):
        method = str(config.get("quant_method", "")).lower()
        for mark, size in QUANTIZED:
            if mark in method or mark in str(config.get("fmt", "")).lower():
                return size, size, f"config.json's quantization_config: {method}"
        return None, FEWEST, f"config.json's quantization {method[:40]!r} is not known here"
    written = {**cell.preset.model_args, **cell.spec.args.flags()}
    words = " ".join(f"{name} {value}" for name, value in written.items()).lower()
    for mark, size in QUANTIZED:
        if mark in words:
            return size, FEWEST, f"a flag names {mark}"
    # a kind not said is looked for in values (a checkpoint's path, an option) alone: a switch's name
    # such as miles' --check-weight-update-allow-quant-error names no checkpoint
    values = " ".join(str(value) for value in written.values() if not isinstance(value, bool)).lower()
    if any(mark in values for mark in MARKS):
        return None, FEWEST, "a flag names a quantization of a kind not said"
    return BF16, BF16, "bf16: no flag names a quantized checkpoint"


def _demand(flag: Callable[[str], Any], facts: Layout) -> tuple[int | None, int | None, str]:
    """(one group's tokens, the tokens in flight on one engine, in words)."""
    response = positive(flag("rollout-max-response-len"))
    if not response:
        return None, None, "--rollout-max-response-len is not set"
    prompt = positive(flag("rollout-max-prompt-len"))
    sample = prompt + response
    samples = positive(flag("n-samples-per-prompt")) or 1
    batch = positive(flag("rollout-batch-size")) * samples
    concurrency = positive(flag("sglang-server-concurrency")) or 512
    engines = max(1, facts.engines)
    in_flight = min(concurrency, -(-batch // engines)) if batch else concurrency
    said = f"{samples} samples x {sample:,} tokens (prompt {prompt or 'unset: 0'} + response {response})"
    return (
        samples * sample,
        in_flight * sample,
        f"{in_flight} requests in flight x {sample:,} tokens; a group: {said}",
    )


def _fraction(value: Any) -> float | None:
    try:
        fraction = float(str(value))
    except ValueError:
        return None
    return fraction if 0 < fraction < 1 else None
