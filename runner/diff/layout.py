"""diff of the derived layouts: GPUs for training and rollout, engines, TP/DP/EP, and what causes each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runner.cells.cell import Cell
from runner.cells.layout import Layout, layout
from runner.diff.difference import Difference
from runner.diff.launch import flag_key
from runner.diff.spec import reason
from runner.spec.load import Key


def layout_differences(a: Cell, b: Cell) -> Iterator[Difference]:
    fa, fb = _layout_facts(a, layout(a)), _layout_facts(b, layout(b))
    for name, (value_a, _) in fa.items():
        value_b, cause = fb[name]
        if value_a != value_b:
            why = reason(a, b, cause, False) if isinstance(cause, tuple) else cause
            yield Difference(name, value_a, value_b, None, None, why)


Cause = Key | str  # the spec key whose reason explains a fact, or how the fact is derived


def _layout_facts(cell: Cell, facts: Layout) -> dict[str, tuple[Any, Cause]]:
    e, act = facts.engine, facts.actor
    mode = "colocate" if facts.colocate else cell.launcher.mode  # the launcher's: miles/launchers.yaml
    flag = {name: key for name in _LAYOUT_FLAGS if (key := flag_key(cell, name))}
    return {
        "mode": (mode, ("launch", "script")),
        "GPUs for training": (facts.actor_gpus + facts.critic_gpus, flag.get("actor-num-gpus-per-node", "")),
        "GPUs for rollout": (facts.rollout_gpus, flag.get("rollout-num-gpus", "= the GPUs training leaves")),
        "actor TP x PP x CP": (f"{act.tp} x {act.pp} x {act.cp}", flag.get("tensor-model-parallel-size", "")),
        "actor DP": (_count(act.dp), "= training GPUs / (TP x PP x CP)"),
        "actor EP x ETP": (f"{act.ep} x {act.etp}", flag.get("expert-model-parallel-size", "")),
        "engines": (facts.engines, "= rollout GPUs / GPUs per engine"),
        "GPUs per engine": (e.gpus, flag.get("rollout-num-gpus-per-engine", "")),
        "engine TP / DP / EP": (f"{e.tp} / {e.dp} / {e.ep}", flag.get("sglang-dp-size", "")),
        "DP-attention": (e.dp_attention, flag.get("sglang-enable-dp-attention", "")),
        "attention-TP per DP rank": (_count(e.attention_tp), "= engine TP / DP with DP-attention"),
        "MoE-TP": (_count(e.moe_tp), "= engine TP / EP"),
    }


_LAYOUT_FLAGS = (
    "actor-num-gpus-per-node",
    "rollout-num-gpus",
    "tensor-model-parallel-size",
    "expert-model-parallel-size",
    "rollout-num-gpus-per-engine",
    "sglang-dp-size",
    "sglang-enable-dp-attention",
)


def _count(value: float) -> int | float:
    return int(value) if value.is_integer() else round(value, 2)
