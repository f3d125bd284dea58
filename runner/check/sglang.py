"""S*: one SGLang rollout engine, as SGLang's ServerArgs and model build count it (0.5.10, 0.5.16).

miles makes every engine ``tp = rollout-num-gpus-per-engine``; with DP-attention,
``dp`` splits those GPUs into attention-DP ranks of ``tp / dp`` and ``ep`` splits them
for the experts: neither adds GPUs (the PR #1124 question).
"""

from __future__ import annotations

from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import EP_FORCING_A2A, Layout, integer
from runner.check import problem, rule
from runner.check.choices import NSA_FLAGS, one_of
from runner.errors import Problem

DSA_KV_DTYPES = ("auto", "bf16", "bfloat16", "fp8_e4m3")


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


@rule("S2")
def engine_spans_whole_nodes(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """An engine over several nodes splits its tp x pp GPUs evenly over them: SGLang asserts "tp_size must be
    divisible by number of nodes".

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs.check_server_args
    """
    engine = facts.engine
    if (engine.tp * engine.pp) % engine.nodes:
        yield problem(
            "S2",
            cell,
            ("rollout-num-gpus-per-engine",),
            f'an engine of {engine.tp} GPUs spans {engine.nodes} nodes: "tp_size must be divisible'
            f' by number of nodes" ({engine.tp} % {engine.nodes} != 0)',
            "use a multiple of the GPUs per node",
        )


@rule("S3")
def dp_divides_the_engine(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """With DP-attention, sglang-dp-size divides the engine's tp: each DP rank gets tp / dp GPUs of attention
    TP (SGLang asserts it bare).

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs._handle_data_parallelism
    """
    engine = facts.engine
    if engine.dp_attention and engine.dp > 1 and engine.tp % engine.dp:
        yield problem(
            "S3",
            cell,
            ("sglang-dp-size", "rollout-num-gpus-per-engine"),
            f"rollout engine has {engine.tp} GPUs (tp = {engine.tp}); sglang-dp-size {engine.dp} does"
            f" not divide it with DP-attention: attention TP would be {engine.tp}/{engine.dp}",
            f"use dp {' or '.join(_divisors(engine.tp).rsplit(', ', 1))}",
        )


@rule("S4")
def dp_one_turns_dp_features_off(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """With sglang-dp-size 1 SGLang turns DP-attention and the DP LM head off: those flags have no effect.

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs._handle_data_parallelism
    """
    on = [f for f in ("sglang-enable-dp-attention", "sglang-enable-dp-lm-head") if cell.flag(f)]
    if facts.engine.dp == 1 and on:
        yield problem(
            "S4",
            cell,
            tuple(on),
            f"with sglang-dp-size 1 SGLang turns {' and '.join('--' + f for f in on)} off: no effect",
            "delete them, or set sglang-dp-size",
            "warning",
        )


@rule("S5")
def dp_lm_head_needs_dp_attention(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """--sglang-enable-dp-lm-head needs DP-attention: SGLang refuses it at start-up.

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs._handle_data_parallelism
    """
    # With dp 1, SGLang turns dp-lm-head off first (S4) and does not complain.
    if cell.flag("sglang-enable-dp-lm-head") and not facts.engine.dp_attention and facts.engine.dp > 1:
        yield problem(
            "S5",
            cell,
            ("sglang-enable-dp-lm-head",),
            '"Please enable dp attention when setting enable_dp_lm_head."',
            "add sglang-enable-dp-attention, or delete sglang-enable-dp-lm-head",
        )


@rule("S6")
def chunked_prefill_fits_pages(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The chunked prefill size (divided by dp under DP-attention) is a multiple of the page size SGLang
    uses, or SGLang refuses to start.

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs._handle_data_parallelism, then
    ServerArgs.check_server_args
    """
    chunk = integer(cell.flag("sglang-chunked-prefill-size"), 0)
    if chunk <= 0:
        return
    engine = facts.engine
    split = engine.dp_attention and engine.dp > 1
    effective = chunk // engine.dp if split else chunk
    page = page_size(cell)
    if effective % page:
        via = f" / dp {engine.dp} = {effective}" if split else ""
        yield problem(
            "S6",
            cell,
            ("sglang-chunked-prefill-size", "sglang-page-size"),
            f"chunked prefill {chunk}{via} is not a multiple of page size {page}:"
            ' "chunked_prefill_size must be divisible by page_size"',
            f"use a chunked prefill size divisible by {page * (engine.dp if split else 1)}",
        )


@rule("S7")
def ep_divides_the_engine(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """sglang-ep-size divides the engine's tp: EP splits the TP group for the experts and adds no GPUs, so
    otherwise the process groups break.

    Source: SGLang python/sglang/srt/distributed/parallel_state.py, initialize_model_parallel (MoE TP = tp
    / ep)
    """
    engine = facts.engine
    if engine.tp % engine.ep:
        yield problem(
            "S7",
            cell,
            ("sglang-ep-size", "rollout-num-gpus-per-engine"),
            f"sglang-ep-size {engine.ep} does not divide the engine's {engine.tp} GPUs (tp = {engine.tp}):"
            f" EP splits the TP group for the experts, MoE TP would be {engine.tp}/{engine.ep}",
            f"use ep {' or '.join(_divisors(engine.tp).rsplit(', ', 1))}",
        )


@rule("S8")
def experts_split_evenly(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The experts split evenly over sglang-ep-size and the MoE intermediate size over MoE TP, or the model
    fails to load.

    Source: SGLang python/sglang/srt/layers/moe/fused_moe_triton/layer.py, FusedMoE
    """
    engine, model = facts.engine, facts.model
    if model.experts and model.experts % engine.ep:
        yield problem(
            "S8",
            cell,
            ("sglang-ep-size", "num-experts"),
            f"{model.experts} experts do not split over sglang-ep-size {engine.ep}",
            f"use an ep that divides {model.experts}",
        )
    if model.experts and model.moe_ffn_hidden and engine.tp % engine.ep == 0:
        moe_tp = engine.tp // engine.ep
        if model.moe_ffn_hidden % moe_tp:
            yield problem(
                "S8",
                cell,
                ("sglang-ep-size", "moe-ffn-hidden-size"),
                f"MoE intermediate size {model.moe_ffn_hidden} does not split over MoE TP"
                f" {engine.tp}/{engine.ep} = {moe_tp}",
            )


@rule("S9")
def a2a_backend_forces_ep(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """An all-to-all MoE backend (deepep, mooncake, ...) forces ep = tp: a different sglang-ep-size is
    overridden.

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs._handle_a2a_moe
    """
    backend, given = cell.flag("sglang-moe-a2a-backend"), cell.flag("sglang-ep-size")
    engine = facts.engine
    if backend in EP_FORCING_A2A and given is not None and integer(given, 1) != engine.tp:
        yield problem(
            "S9",
            cell,
            ("sglang-ep-size", "sglang-moe-a2a-backend"),
            f"--sglang-moe-a2a-backend {backend} forces ep = tp = {engine.tp};"
            f" sglang-ep-size {given} is overridden",
            f"set sglang-ep-size {engine.tp}",
            "warning",
        )


@rule("S10")
def moe_dense_tp_is_one(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """--sglang-moe-dense-tp-size is 1 (or the engine's tp, where the stack's SGLang accepts it), or SGLang
    refuses to start.

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs.check_server_args; the hardware profile's
    supports.moe_dense_tp_full (matrices/hardware/)
    """
    value, tp = cell.flag("sglang-moe-dense-tp-size"), facts.engine.tp
    if value is None or integer(value, 0) == 1:
        return
    if not cell.profile.supports.moe_dense_tp_full:
        yield problem(
            "S10",
            cell,
            ("sglang-moe-dense-tp-size",),
            f'sglang-moe-dense-tp-size {value}: "moe_dense_tp_size only support 1 and None currently"',
            "set it to 1 or delete it",
        )
    elif integer(value, 0) != tp:
        yield problem(
            "S10",
            cell,
            ("sglang-moe-dense-tp-size", "rollout-num-gpus-per-engine"),
            f"sglang-moe-dense-tp-size {value} on an engine of tp {tp}:"
            ' "moe_dense_tp_size only supports None, 1, or tp_size currently"',
            f"set it to 1 or {tp}, or delete it",
        )


@rule("S11")
def dsa_forces_page_size(cell: Cell, _: Layout) -> Iterator[Problem]:
    """For DSA models SGLang forces the page size (64 on CUDA, 1 on ROCm) whatever the flag says, and needs a
    bf16 or fp8_e4m3 KV cache.

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs._handle_model_specific_adjustments; the
    hardware profile's supports.dsa_page_size (matrices/hardware/)
    """
    if not cell.preset.sparse_attention:
        return
    given, forced = cell.flag("sglang-page-size"), cell.profile.supports.dsa_page_size
    if given is not None and integer(given, 0) != forced:
        yield problem(
            "S11",
            cell,
            ("sglang-page-size",),
            f"SGLang forces page size {forced} for DSA models on {cell.profile.name}"
            f" ({cell.profile.platform}); --sglang-page-size {given} has no effect",
            "delete it",
            "warning",
        )
    kv_dtype = cell.flag("sglang-kv-cache-dtype")
    if kv_dtype is not None and kv_dtype not in DSA_KV_DTYPES:
        yield problem(
            "S11",
            cell,
            ("sglang-kv-cache-dtype",),
            f"DSA models need a bf16 or fp8_e4m3 KV cache, not {kv_dtype}",
            "use fp8_e4m3 or delete it",
        )


one_of("S12")


@rule("S13")
def flashmla_sparse_heads_pad(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """FlashMLA sparse pads the heads per attention-TP rank to 64 (Hopper) or 128 (Blackwell): a count that
    neither divides nor is divided by that fails at run time.

    Source: SGLang python/sglang/srt/layers/attention/nsa_backend.py, _forward_flashmla_sparse; the
    hardware profile's supports.flashmla_sparse_heads (matrices/hardware/)
    """
    multiple, heads = cell.profile.supports.flashmla_sparse_heads, facts.model.heads
    used = [f for f in NSA_FLAGS if cell.flag(f) == "flashmla_sparse"]
    attn_tp = facts.engine.attention_tp
    if not (used and multiple and heads and attn_tp.is_integer() and heads % attn_tp == 0):
        return
    per_rank = heads // int(attn_tp)
    if per_rank % multiple and multiple % per_rank:
        yield problem(
            "S13",
            cell,
            (used[0], "rollout-num-gpus-per-engine", "sglang-dp-size"),
            f"FlashMLA sparse pads heads per attention-TP rank to {multiple} on {cell.profile.name}:"
            f" {heads} heads / attention-TP {int(attn_tp)} = {per_rank}, which neither divides"
            f" nor is divided by {multiple}",
            "change the engine's tp/dp, or the NSA backend",
        )


@rule("S14")
def heads_split_over_attention_tp(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The attention heads split over the engine's attention TP, and the KV heads divide it or are divided by
    it, or the model fails to load.

    Source: SGLang's attention layers as the model is built (python/sglang/srt/models/deepseek_v2.py,
    llama.py, qwen2.py)
    """
    heads, attn_tp, engine = facts.model.heads, facts.engine.attention_tp, facts.engine
    if not heads or not attn_tp.is_integer():
        return  # S3 reports a fractional attention TP
    shown = f"{engine.tp}/{engine.dp} = {int(attn_tp)}" if engine.dp_attention else str(int(attn_tp))
    if heads % attn_tp:
        yield problem(
            "S14",
            cell,
            ("rollout-num-gpus-per-engine", "num-attention-heads"),
            f"{heads} attention heads do not split over attention-TP {shown}",
            "choose tp/dp so that attention TP divides the heads",
        )
    groups = facts.model.query_groups
    if groups and groups % attn_tp and attn_tp % groups:
        yield problem(
            "S14",
            cell,
            ("rollout-num-gpus-per-engine", "num-query-groups"),
            f"{groups} KV heads neither divide nor are divided by attention-TP {shown}",
        )


@rule("S16")
def multi_node_dp_needs_dp_attention(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """An engine over several nodes with sglang-dp-size above 1 needs DP-attention: "multi-node data parallel
    is not supported unless dp attention!"

    Source: SGLang python/sglang/srt/server_args.py, ServerArgs.check_server_args
    """
    engine = facts.engine
    if engine.nodes > 1 and engine.dp > 1 and not engine.dp_attention:
        yield problem(
            "S16",
            cell,
            ("sglang-dp-size", "rollout-num-gpus-per-engine"),
            '"multi-node data parallel is not supported unless dp attention!"',
            "add sglang-enable-dp-attention",
        )


@rule("S17")
def engine_fits_a_node(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """An engine on one node needs no more GPUs than the node has: SGLang never checks, and the engine
    addresses GPUs that do not exist.

    Source: miles miles/backends/sglang_utils/sglang_engine.py, get_base_gpu_id (an engine's GPUs from its
    base id); SGLang does not check it
    """
    engine = facts.engine
    if engine.nodes == 1 and engine.tp * engine.pp > facts.gpus_per_node:
        yield problem(
            "S17",
            cell,
            ("rollout-num-gpus-per-engine",),
            f"an engine of {engine.tp * engine.pp} GPUs on one node of {facts.gpus_per_node}:"
            " it would address GPUs the node does not have",
            "use at most the GPUs per node, or whole nodes",
        )


def page_size(cell: Cell) -> int:
    """The page size SGLang will use: forced for DSA models, else the flag, else 1."""
    if cell.preset.sparse_attention:
        return cell.profile.supports.dsa_page_size
    return integer(cell.flag("sglang-page-size"), 1)
