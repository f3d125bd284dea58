"""M*: the actor, as Megatron counts it (validate_args, parallel state, TransformerConfig)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout, integer
from runner.check import problem, rule
from runner.check.choices import one_of
from runner.errors import Problem
from runner.launch.runtime_env import runtime_env

UNEVEN_PIPELINE = (
    "decoder-first-pipeline-num-layers",
    "decoder-last-pipeline-num-layers",
    "num-layers-per-virtual-pipeline-stage",
    "pipeline-model-parallel-layout",
)
PARALLEL = ("tensor-model-parallel-size", "pipeline-model-parallel-size", "context-parallel-size")
EXPERT_PARALLEL = (
    "expert-tensor-parallel-size",
    "expert-model-parallel-size",
    "pipeline-model-parallel-size",
)


@rule("M1")
def world_divides_by_model_parallel(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The actor's world size divides by TP x PP x CP: Megatron builds its data-parallel groups from the
    rest.

    Source: Megatron-LM megatron/core/parallel_state.py, initialize_model_parallel
    """
    a = facts.actor
    yield from _world_divides("M1", cell, facts, PARALLEL, {"TP": a.tp, "PP": a.pp, "CP": a.cp})


@rule("M2")
def world_divides_by_expert_parallel(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The actor's world size divides by ETP x EP x PP (ETP defaults to TP), or Megatron cannot build its
    expert groups.

    Source: Megatron-LM megatron/core/parallel_state.py, initialize_model_parallel
    """
    a = facts.actor
    sizes = {"ETP": a.etp, "EP": a.ep, "PP": a.pp}
    note = " (ETP defaults to TP)" if cell.flag("expert-tensor-parallel-size") is None else ""
    yield from _world_divides("M2", cell, facts, EXPERT_PARALLEL, sizes, note)


def _world_divides(
    rule_id: str, cell: Cell, facts: Layout, flags: tuple[str, ...], sizes: dict[str, int], note: str = ""
) -> Iterator[Problem]:
    """The actor's world must divide into groups of the product of ``sizes`` (Megatron's parallel state)."""
    world, size = facts.actor.world, math.prod(sizes.values())
    names = " x ".join(sizes)
    if world % size:
        yield problem(
            rule_id,
            cell,
            (*flags, "actor-num-gpus-per-node"),
            f"actor world {world} is not divisible by {names} = "
            f"{' x '.join(str(s) for s in sizes.values())} = {size}{note}",
            f"make {names} divide {world}",
        )


@rule("M3")
def experts_divide_by_ep(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """Expert parallelism needs a MoE model whose expert count EP divides.

    Source: Megatron-LM megatron/training/arguments.py, validate_args
    """
    ep, experts = facts.actor.ep, facts.model.experts
    if ep > 1 and not experts:
        yield problem(
            "M3",
            cell,
            ("expert-model-parallel-size",),
            f"expert-model-parallel-size {ep} needs --num-experts (a MoE model)",
        )
    elif ep > 1 and experts and experts % ep:
        yield problem(
            "M3",
            cell,
            ("expert-model-parallel-size", "num-experts"),
            f'"Number of experts should be a multiple of expert model parallel_size.":'
            f" {experts} experts, EP {ep}",
            f"use an EP that divides {experts}",
        )


@rule("M4")
def heads_divide_by_tp(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The attention heads divide by TP: each tensor-parallel rank holds whole heads.

    Source: Megatron-LM megatron/core/transformer/transformer_config.py, TransformerConfig.__post_init__
    """
    heads, tp = facts.model.heads, facts.actor.tp
    if heads and heads % tp:
        yield problem(
            "M4",
            cell,
            ("tensor-model-parallel-size", "num-attention-heads"),
            f"num_attention_heads ({heads}) must be a multiple of tensor_model_parallel_size ({tp})",
        )


@rule("M5")
def query_groups_and_tp(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """GQA's query groups are a multiple or a divisor of TP.

    Source: Megatron-LM megatron/core/transformer/transformer_config.py, TransformerConfig.__post_init__
    """
    groups, tp = facts.model.query_groups, facts.actor.tp
    if groups and groups % tp and tp % groups:
        yield problem(
            "M5",
            cell,
            ("tensor-model-parallel-size", "num-query-groups"),
            f"num_query_groups ({groups}) must be a multiple or divisor of tensor_model_parallel_size ({tp})",
        )


@rule("M6")
def sequence_splits_over_cp(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """With CP above 1 the sequence length is a multiple of 2 x CP: each rank takes two chunks.

    Source: Megatron-LM megatron/training/arguments.py, validate_args
    """
    cp, seq = facts.actor.cp, integer(cell.flag("seq-length"), 0)
    if cp > 1 and seq and seq % (2 * cp):
        yield problem(
            "M6",
            cell,
            ("seq-length", "context-parallel-size"),
            f"seq-length {seq} is not a multiple of 2 x context-parallel-size = {2 * cp}",
        )


@rule("M7")
def sequence_parallel_sense(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """--sequence-parallel with TP 1 is turned off; expert parallelism with TP above 1 wants sequence
    parallel (Megatron warns; 0.14 refused it).

    Source: Megatron-LM megatron/training/arguments.py, validate_args;
    megatron/core/model_parallel_config.py, ModelParallelConfig.__post_init__
    """
    a, sp = facts.actor, bool(cell.flag("sequence-parallel"))
    if sp and a.tp == 1:
        yield problem(
            "M7",
            cell,
            ("sequence-parallel", "tensor-model-parallel-size"),
            "--sequence-parallel with TP 1: Megatron turns it off",
            "delete it",
            "warning",
        )
    if a.ep > 1 and a.tp > 1 and not sp:
        yield problem(
            "M7",
            cell,
            ("expert-model-parallel-size", "tensor-model-parallel-size"),
            "expert parallelism with TP > 1 wants --sequence-parallel (Megatron warns; 0.14 refused)",
            "add sequence-parallel",
            "warning",
        )


@rule("M8")
def layers_divide_by_pp(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """Without an uneven or virtual pipeline layout, the layers split evenly over PP.

    Source: Megatron-LM megatron/training/arguments.py, validate_args
    """
    layers, pp = facts.model.layers, facts.actor.pp
    if layers and layers % pp and not any(cell.flag(f) is not None for f in UNEVEN_PIPELINE):
        yield problem(
            "M8",
            cell,
            ("pipeline-model-parallel-size", "num-layers"),
            f"{layers} layers do not split over pipeline-model-parallel-size {pp}",
            f"use a PP that divides {layers}, or an uneven pipeline layout",
        )


@rule("M9")
def cpu_offload_prerequisites(cell: Cell, _: Layout) -> Iterator[Problem]:
    """--optimizer-cpu-offload needs --use-precision-aware-optimizer, which works with adam only.

    Source: Megatron-LM megatron/training/arguments.py, validate_args;
    megatron/core/optimizer/optimizer_config.py, OptimizerConfig.__post_init__
    """
    if cell.flag("optimizer-cpu-offload") and not cell.flag("use-precision-aware-optimizer"):
        yield problem(
            "M9",
            cell,
            ("optimizer-cpu-offload",),
            "optimizer CPU offload must be used with --use-precision-aware-optimizer (the hybrid"
            " device optimizer reuses its code path)",
            "add use-precision-aware-optimizer",
        )
    optimizer = cell.flag("optimizer", "adam")
    if cell.flag("use-precision-aware-optimizer") and optimizer != "adam":
        yield problem(
            "M9",
            cell,
            ("use-precision-aware-optimizer", "optimizer"),
            f"--use-precision-aware-optimizer is only supported with adam, not {optimizer}",
        )


@rule("M10")
def deepep_needs_flex(cell: Cell, _: Layout) -> Iterator[Problem]:
    """--moe-enable-deepep needs the flex token dispatcher.

    Source: Megatron-LM megatron/core/transformer/transformer_config.py, TransformerConfig.__post_init__
    """
    dispatcher = cell.flag("moe-token-dispatcher-type", "allgather")
    if cell.flag("moe-enable-deepep") and dispatcher != "flex":
        yield problem(
            "M10",
            cell,
            ("moe-enable-deepep", "moe-token-dispatcher-type"),
            f'"DeepEP backend is only supported with flex token dispatcher." (dispatcher: {dispatcher})',
            "set moe-token-dispatcher-type: flex, or delete moe-enable-deepep",
        )


@rule("M11")
def deepep_needs_expert_parallelism(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """DeepEP with ETP x EP = 1 has nothing to dispatch between ranks and fails at run time.

    Source: Megatron-LM megatron/core/transformer/moe/token_dispatcher.py, MoEFlexTokenDispatcher
    """
    a = facts.actor
    if cell.flag("moe-enable-deepep") and a.etp * a.ep == 1:
        yield problem(
            "M11",
            cell,
            ("moe-enable-deepep", "expert-model-parallel-size"),
            "DeepEP with ETP x EP = 1 fails at run time: there is nothing to dispatch between ranks",
            "use EP > 1, or delete moe-enable-deepep",
        )


one_of("M12")
one_of("M13")


# what the actor's DP is computed from: world size over the model-parallel sizes
DP_FLAGS = (
    "actor-num-nodes",
    "actor-num-gpus-per-node",
    "tensor-model-parallel-size",
    "pipeline-model-parallel-size",
    "context-parallel-size",
)


@rule("M14")
def global_batch_divides(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The global batch divides by micro batch x actor DP, or Megatron refuses to start.

    Checked whatever miles' dynamic batch size says: Megatron's validate_args checks the eval batch.

    Source: Megatron-LM megatron/core/num_microbatches_calculator.py, ConstantNumMicroBatchesCalculator
    (miles starts it in miles/backends/megatron_utils/initialize.py)
    """
    gbs, mbs, dp = (
        integer(cell.flag("global-batch-size"), 0),
        integer(cell.flag("micro-batch-size"), 1),
        facts.actor.dp,
    )
    if gbs and dp.is_integer() and dp >= 1 and gbs % (mbs * int(dp)):
        yield problem(
            "M14",
            cell,
            ("global-batch-size", "micro-batch-size", *DP_FLAGS),
            f"global batch size {gbs} is not divisible by micro batch {mbs} x actor DP {int(dp)}"
            f" (DP = {facts.actor.world} / (TP x PP x CP))",
            f"use a multiple of {mbs * int(dp)}",
        )


@rule("M15")
def device_max_connections(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """TP or CP above 1 before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1 (miles sets it): an env that
    changes it makes Megatron refuse to start.

    Source: Megatron-LM megatron/training/arguments.py, validate_args
    """
    a = facts.actor
    value = runtime_env(cell, {})[0].get("CUDA_DEVICE_MAX_CONNECTIONS")
    if (a.tp > 1 or a.cp > 1) and cell.profile.compute_capability[0] < 10 and value != "1":
        yield Problem(
            "M15",
            "TP or CP > 1 requires CUDA_DEVICE_MAX_CONNECTIONS=1 (miles sets it; this spec"
            f" makes it {value!r})",
            "env.CUDA_DEVICE_MAX_CONNECTIONS",
            (cell.location("env", "CUDA_DEVICE_MAX_CONNECTIONS"),),
            hint="delete it from env",
        )
