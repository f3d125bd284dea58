"""Every GPU of every node: which actor rank and which rollout engine it holds.

Placement as miles' one placement group packs it: its GPU bundles sorted by node and GPU, the
actor takes the first ones, then the critic, then the rollout; colocated, the engines sit on
the actor's GPUs. Megatron ranks decompose in its default order (TP fastest,
then CP, then DP, then PP; the expert grid ETP, EP, expert-DP); inside an engine, SGLang gives
GPU j attention-DP rank ``j // attention-TP`` and EP rank ``j // MoE-TP``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from runner.cells.layout import Layout
from runner.errors import Location, SpecError


@dataclass(frozen=True)
class ActorRank:
    role: str  # actor | critic
    rank: int
    tp: int
    cp: int
    dp: int
    pp: int
    ep: int
    etp: int


@dataclass(frozen=True)
class EngineRank:
    engine: int
    rank: int  # the GPU's tp rank inside the engine
    attention_dp: int
    attention_tp: int
    ep: int


@dataclass(frozen=True)
class Gpu:
    node: int
    gpu: int
    trainer: ActorRank | None
    rollout: EngineRank | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


MAX_DRAWN_GPUS = 4096  # a map a person reads; larger clusters are refused before anything is drawn


def gpu_map(facts: Layout, where: Location) -> list[Gpu]:
    """Every GPU of the cluster with its actor and engine rank; ``where`` is cluster's line."""
    drawn = max(facts.cluster_gpus, facts.actor_gpus + facts.critic_gpus, facts.engines * facts.engine_stride)
    if drawn > MAX_DRAWN_GPUS:
        raise SpecError.one(
            "budget",
            f"the layout has {drawn:,} GPUs ({facts.nodes} nodes x {facts.gpus_per_node}); "
            f"--layout draws at most {MAX_DRAWN_GPUS:,}",
            key="cluster",
            at=[where],
            hint="draw a smaller cell; the derived facts without --layout hold for any size",
        )
    per_node = facts.gpus_per_node
    trainer = {rank: _actor_rank("actor", rank, facts) for rank in range(facts.actor_gpus)}
    for rank in range(facts.critic_gpus):
        trainer[facts.actor_gpus + rank] = _actor_rank("critic", rank, facts)
    first_rollout = 0 if facts.colocate else facts.actor_gpus + facts.critic_gpus
    rollout = {first_rollout + g: _engine_rank(g, facts) for g in range(facts.engines * facts.engine_stride)}
    return [
        Gpu(index // per_node, index % per_node, trainer.get(index), rollout.get(index))
        for index in range(facts.cluster_gpus)
    ]


def _actor_rank(role: str, rank: int, facts: Layout) -> ActorRank:
    a = facts.actor
    dp = _whole(a.dp)
    return ActorRank(
        role=role,
        rank=rank,
        tp=rank % a.tp,
        cp=(rank // a.tp) % a.cp,
        dp=(rank // (a.tp * a.cp)) % dp,
        pp=rank // (a.tp * a.cp * dp),
        etp=rank % a.etp,
        ep=(rank // a.etp) % a.ep,
    )


def _whole(value: float) -> int:
    """A group size as a count; an invalid layout (validation reports it) draws as size 1."""
    return int(value) if value.is_integer() and value >= 1 else 1


def _engine_rank(index: int, facts: Layout) -> EngineRank:
    e = facts.engine
    stride = facts.engine_stride
    local = index % stride
    attention_tp, moe_tp = _whole(e.attention_tp), _whole(e.moe_tp)
    return EngineRank(index // stride, local, local // attention_tp, local % attention_tp, local // moe_tp)


def lines(gpus: list[Gpu]) -> list[str]:
    """The map as text: one line per GPU, grouped by node."""
    out: list[str] = []
    for gpu in gpus:
        if gpu.gpu == 0:
            out.append(f"node {gpu.node}")
        trainer = "-"
        if gpu.trainer:
            t = gpu.trainer
            trainer = (
                f"{t.role} rank {t.rank}: TP {t.tp} CP {t.cp} DP {t.dp} PP {t.pp} | EP {t.ep} ETP {t.etp}"
            )
        rollout = "-"
        if gpu.rollout:
            r = gpu.rollout
            rollout = f"engine {r.engine} rank {r.rank}: attn-DP {r.attention_dp}"
            rollout += f" attn-TP {r.attention_tp} EP {r.ep}"
        out.append(f"  GPU {gpu.gpu}  {trainer:<52}  {rollout}")
    return out
