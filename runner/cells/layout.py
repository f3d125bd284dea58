"""Derived facts of a cell: how miles places the actor and the rollout engines on the GPUs.

Counted as miles, SGLang and Megatron count (shared/reference/parallelism-rules.md):
an engine has ``tp = rollout-num-gpus-per-engine`` GPUs; with DP-attention, dp and ep
split those GPUs, they do not multiply them. Pure arithmetic; the rules judge it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.cells.cell import Cell
from runner.errors import counted

# SGLang's all-to-all MoE backends that span the whole engine: ServerArgs sets ep_size = tp_size
# for them, whatever --sglang-ep-size says (0.5.10's _handle_a2a_moe; 0.5.16's _a2a_ep_size pass,
# which adds megamoe and nixl). Rule S9 warns that the given value is overridden.
EP_FORCING_A2A = ("deepep", "mooncake", "mori", "flashinfer", "ascend_fuseep", "megamoe", "nixl")


@dataclass(frozen=True)
class Engine:
    """One SGLang rollout engine."""

    tp: int  # GPUs of the engine (miles passes rollout-num-gpus-per-engine as tp)
    dp: int
    ep: int  # as SGLang runs it: tp under an EP_FORCING_A2A backend, else sglang-ep-size
    pp: int
    dp_attention: bool
    nodes: int  # nodes one engine spans

    @property
    def gpus(self) -> int:
        """S1: DP-attention (or dp 1) keeps the engine at tp x pp; plain dp multiplies it."""
        split = self.dp_attention or self.dp == 1
        return self.tp * self.pp if split else self.dp * self.tp * self.pp

    @property
    def attention_tp(self) -> float:
        return self.tp / self.dp if self.dp_attention else float(self.tp)

    @property
    def moe_tp(self) -> float:
        return self.tp / self.ep


@dataclass(frozen=True)
class Actor:
    """The Megatron training world."""

    world: int
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int

    @property
    def dp(self) -> float:
        return self.world / (self.tp * self.pp * self.cp)

    @property
    def expert_dp(self) -> float:
        return self.world / (self.etp * self.ep * self.pp)


@dataclass(frozen=True)
class ModelFacts:
    """What of the model's shape the parallelism rules divide (None: no flag says it)."""

    layers: int | None
    heads: int | None
    query_groups: int | None  # GQA only
    experts: int | None
    moe_ffn_hidden: int | None
    sparse_attention: bool


@dataclass(frozen=True)
class Layout:
    """Where a cell's processes go: its nodes and GPUs, the actor's, the critic's and the engines'."""

    colocate: bool
    nodes: int
    gpus_per_node: int  # what `ray start --num-gpus` gets
    actor_gpus: int
    critic_gpus: int  # besides the actor's: 0 without a critic, or where it trains on the actor's
    rollout_gpus: int  # colocate: the actor's (+ critic's) GPUs
    engine: Engine
    actor: Actor
    model: ModelFacts
    train_only: bool = False  # --debug-train-only: no engines start, the actor trains on saved rollouts
    eval_gpus: int = 0  # miles main's eval fleet (--eval-num-gpus): GPUs of its own, unless colocated

    @property
    def cluster_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def engine_stride(self) -> int:
        """L4: miles cuts the rollout GPUs into engines of min(gpus per engine, GPUs per node)."""
        return max(1, min(self.engine.tp, self.gpus_per_node))

    @property
    def engines(self) -> int:
        return self.rollout_gpus // self.engine_stride

    @property
    def wasted_rollout_gpus(self) -> int:
        return self.rollout_gpus % self.engine_stride

    @property
    def needed_gpus(self) -> int:
        """Colocated, the engines share the training GPUs; otherwise everything needs its own."""
        own = 0 if self.colocate else self.rollout_gpus + self.eval_gpus
        return self.actor_gpus + self.critic_gpus + own


def _count(value: Any) -> int:
    """A count that may be 0 (its default): --eval-num-gpus."""
    return 0 if value in (None, 0, "0") else integer(value, 0)


def integer(value: Any, default: int) -> int:
    """A count's value, or ``default`` when unset, not an integer or below 1 (rule G4 reports
    those): the arithmetic of every rule can then divide by it."""
    if value is None or isinstance(value, bool):
        return default
    try:
        number = int(str(value))
    except ValueError:
        return default
    return number if number >= 1 else default


def layout(cell: Cell) -> Layout:
    flag = cell.flag
    gpus_per_node = cell.spec.cluster.gpus_per_node
    miles_gpn = integer(flag("num-gpus-per-node"), 8)
    actor_gpus = integer(flag("actor-num-nodes"), 1) * integer(flag("actor-num-gpus-per-node"), 8)
    uses_critic = bool(flag("use-critic")) or flag("advantage-estimator") == "ppo"
    own_gpus = uses_critic and cell.conventions.critic_placement == "own"
    critic_gpus = (
        integer(flag("critic-num-nodes"), integer(flag("actor-num-nodes"), 1))
        * integer(flag("critic-num-gpus-per-node"), integer(flag("actor-num-gpus-per-node"), 8))
        if own_gpus
        else 0
    )
    colocate = bool(flag("colocate"))
    train_only = bool(flag("debug-train-only"))  # miles' placement group then holds the actor alone
    rollout = actor_gpus + critic_gpus if colocate else integer(flag("rollout-num-gpus"), 0)
    rollout = 0 if train_only else rollout
    tp = integer(flag("rollout-num-gpus-per-engine"), 1)
    engine = Engine(
        tp=tp,
        dp=integer(flag("sglang-dp-size"), 1),
        ep=tp if flag("sglang-moe-a2a-backend") in EP_FORCING_A2A else integer(flag("sglang-ep-size"), 1),
        pp=integer(flag("sglang-pp-size"), 1),
        dp_attention=bool(flag("sglang-enable-dp-attention")),
        nodes=max(1, tp // miles_gpn),
    )
    actor_tp = integer(flag("tensor-model-parallel-size"), 1)
    actor = Actor(
        world=actor_gpus,
        tp=actor_tp,
        pp=integer(flag("pipeline-model-parallel-size"), 1),
        cp=integer(flag("context-parallel-size"), 1),
        ep=integer(flag("expert-model-parallel-size"), 1),
        etp=integer(flag("expert-tensor-parallel-size"), actor_tp),
    )
    return Layout(
        colocate,
        cell.spec.cluster.nodes,
        gpus_per_node,
        actor_gpus,
        critic_gpus,
        rollout,
        engine,
        actor,
        model_facts(cell),
        train_only,
        0 if colocate or train_only else _count(flag("eval-num-gpus")),
    )


def model_facts(cell: Cell) -> ModelFacts:
    def number(name: str) -> int | None:
        value = cell.flag(name)
        return integer(value, 0) or None

    return ModelFacts(
        layers=number("num-layers"),
        heads=number("num-attention-heads"),
        query_groups=number("num-query-groups") if cell.flag("group-query-attention") else None,
        experts=number("num-experts"),
        moe_ffn_hidden=number("moe-ffn-hidden-size") or number("ffn-hidden-size"),
        sparse_attention=cell.preset.sparse_attention,
    )


def describe(facts: Layout) -> dict[str, str]:
    """The layout in words, as `explain` shows it: how the GPUs are counted."""
    a, e, m = facts.actor, facts.engine, facts.model
    experts_per_rank = (
        f"; {m.experts // a.ep} experts per EP rank" if m.experts and m.experts % a.ep == 0 else ""
    )
    lines = {
        "cluster": f"{counted(facts.nodes, 'node')} x {counted(facts.gpus_per_node, 'GPU')}"
        f" = {facts.cluster_gpus}",
        "actor": f"{a.world} GPUs: TP {a.tp} x PP {a.pp} x CP {a.cp} -> DP {_number(a.dp)};"
        f" experts: EP {a.ep} x ETP {a.etp} -> expert DP {_number(a.expert_dp)}{experts_per_rank}",
        "rollout": f"{facts.rollout_gpus} GPUs{' (shared with training: colocate)' if facts.colocate else ''}"
        f" -> {counted(facts.engines, 'engine')} x {counted(facts.engine_stride, 'GPU')} (tp {e.tp})"
        + (f", {facts.wasted_rollout_gpus} idle" if facts.wasted_rollout_gpus else ""),
    }
    if e.dp_attention:
        attention = (
            f"DP-attention: {counted(e.dp, 'attention-DP rank')}"
            f" x attention-TP {e.tp}/{e.dp} = {_number(e.attention_tp)}"
        )
    else:
        attention = f"attention-TP {e.tp} (no DP-attention)"
    moe_experts = f" ({m.experts // e.ep} experts per EP rank)" if m.experts and m.experts % e.ep == 0 else ""
    lines["engine"] = (
        f"{e.gpus} GPUs; {attention};"
        f" MoE: EP {e.ep} x MoE-TP {e.tp}/{e.ep} = {_number(e.moe_tp)}{moe_experts}"
    )
    return lines


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:.2f}"
