"""engine: what one SGLang rollout engine holds on each of its GPUs.

SGLang's static memory is ``mem_fraction_static`` of the GPU: the weights, and a KV pool sized to
what is left of that fraction once the weights are loaded (``ModelRunner.profile_max_num_token``:
``available - total x (1 - mem_fraction_static)``); the rest of the GPU is its reserve for
activations and CUDA graphs. Without ``--sglang-mem-fraction-static`` SGLang picks the fraction from
the GPU's memory (``ServerArgs._handle_gpu_memory_settings``), which :func:`default_fraction`
follows. Weights are split as SGLang shards a model: attention over the attention TP (TP / DP with
DP-attention), experts over the whole engine (EP x MoE TP), pipeline stages apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.memory import kv
from runner.memory.model import Shape
from runner.memory.params import Split, shards
from runner.memory.terms import GIB, Term

SERVER_ARGS = "sglang/srt/server_args.py: ServerArgs._handle_gpu_memory_settings"
POOL = "sglang/srt/model_executor/model_runner*.py: ModelRunner.profile_max_num_token"
ENGINE_CONTEXT = 1.0 * GIB  # the CUDA context and NCCL communicators the engine holds before its pool


@dataclass(frozen=True)
class Rollout:
    """What the rollout asks of one engine, and how the engine is built."""

    tp: int
    dp: int
    ep: int
    pp: int
    dp_attention: bool
    fraction: float  # mem_fraction_static
    fraction_from: str
    default_fraction: float  # what SGLang would choose: the reserve it keeps for activations
    weight_bytes: float | None  # bytes a parameter of the rollout checkpoint (None: unknown)
    weight_lower: float  # the fewest it can be
    weight_from: str
    kv_bytes: float | None
    kv_dtype: str
    group_tokens: int | None  # one prompt's samples: n-samples-per-prompt x (prompt + response)
    asked_tokens: int | None  # in flight at once: concurrency x (prompt + response)
    demand_from: str

    @property
    def attention_tp(self) -> int:
        return max(1, self.tp // self.dp) if self.dp_attention else self.tp


def default_fraction(memory_gib: float, tp: int, pp: int, dp: int, dp_attention: bool, mla: bool) -> float:
    """SGLang's mem_fraction_static for a GPU of ``memory_gib`` when none is given: its reserve in
    MB (512 of metadata, 1.5 x the chunked prefill size, 2 a CUDA graph batch, 1024 per 8 GPUs of
    TP x PP, DP-attention's padding, the piecewise CUDA graphs; at least 10 GB above 60 GB) off
    the GPU, rounded to three digits as SGLang rounds it."""
    mb = memory_gib * 1024
    chunk, graphs = (8192, 256 if tp < 4 else 512) if mb < 160 * 1024 else (16384, 512)
    if mb < 60 * 1024:
        chunk, graphs = (4096, 32 if tp < 4 else 160) if mb >= 35 * 1024 else (2048, 24 if tp < 4 else 80)
    reserved = 512 + max(chunk, 2048) * 1.5 + graphs * 2 + tp * pp / 8 * 1024
    if dp_attention:
        reserved += graphs * dp * 3 + (graphs * dp * 1.5 if graphs > 300 else 0)
    reserved += 1.5 * 1024 if mla else 0  # the piecewise CUDA graphs of an MLA backend
    if mb > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mb - reserved) / mb, 3)


def weights_per_gpu(shape: Shape, r: Rollout) -> float:
    """Parameters on the most loaded GPU of an engine."""
    moe_tp = max(1, r.tp // max(1, r.ep))
    split = Split(tp=r.attention_tp, pp=r.pp, ep=max(1, r.ep), etp=moe_tp)
    return max(s.total for s in shards(shape, split))


def terms(shape: Shape, r: Rollout, memory: float) -> list[Term]:
    """The engine's weights, its KV pool, and its reserve, on one GPU."""
    params = weights_per_gpu(shape, r)
    static = r.fraction * memory
    where = f"{params / 1e9:.2f} B parameters a GPU (attention TP {r.attention_tp}, EP {r.ep}, PP {r.pp})"
    if r.weight_bytes is None:
        weights = Term("engine", "weights", None, "", "", why_not=r.weight_from)
        lower = Term(
            "engine",
            "weights, at least",
            params * r.weight_lower,
            "run-matrix",
            f"{where} x {r.weight_lower:g} B",
            lower=True,
        )
        found = [lower, weights]
    else:
        found = [
            Term(
                "engine",
                "weights",
                params * r.weight_bytes,
                "sglang ModelRunner.load_model",
                f"{where} x {r.weight_bytes:g} B ({r.weight_from})",
                lower=True,
            )
        ]
    found.append(
        Term(
            "engine",
            "CUDA context and NCCL",
            ENGINE_CONTEXT,
            "run-matrix: an allowance, not modelled",
            "1 GiB a process",
        )
    )
    pool = static - sum(t.bytes or 0.0 for t in found)
    found.append(
        Term(
            "engine",
            "KV cache pool",
            max(0.0, pool),
            POOL,
            f"mem_fraction_static {r.fraction:g} ({r.fraction_from}) x {memory / GIB:.0f} GB, less the above",
        )
    )
    # SGLang's activations and CUDA graphs: the reserve its default fraction keeps, within what is left
    reserve = min(memory - static, (1 - r.default_fraction) * memory)
    found.append(
        Term(
            "engine",
            "activations and CUDA graphs",
            reserve,
            SERVER_ARGS,
            f"SGLang's own reserve for this GPU (1 - {r.default_fraction:g}), within 1 - {r.fraction:g}",
        )
    )
    return found


def pool_bytes(shape: Shape, r: Rollout, memory: float) -> float:
    """The KV pool SGLang sizes (negative: the weights alone exceed the static memory)."""
    params = weights_per_gpu(shape, r)
    return r.fraction * memory - params * (r.weight_bytes or r.weight_lower) - ENGINE_CONTEXT


def capacity(shape: Shape, r: Rollout, memory: float) -> tuple[int, kv.Cell] | None:
    """Tokens an engine's pool holds (DP-attention: every DP rank has a pool of its own)."""
    if r.kv_bytes is None:
        return None
    cell = kv.cell(shape, r.attention_tp, r.pp, r.kv_bytes)
    tokens = cell.tokens(pool_bytes(shape, r, memory))
    return tokens * (r.dp if r.dp_attention else 1), cell
