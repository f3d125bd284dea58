"""runner/memory/actor.py: which pipeline stage's GPU holds most (its formulas against Megatron-LM's
own are tests/differential/test_memory_megatron_theory.py)."""

from __future__ import annotations

from dataclasses import replace

from runner.memory import actor
from runner.memory.activations import activation_terms
from runner.memory.model import Shape
from runner.memory.params import Split, shards
from runner.memory.training import Training
from tests.differential.test_memory_megatron_theory import CONFIGS, shape, training


def held(model: Shape, t: Training, stage: int) -> float:
    shard = shards(model, t.split)[stage]
    return sum(x.bytes or 0.0 for x in actor.state_terms(model, shard, t) + activation_terms(model, t, shard))


def test_a_middle_stage_is_the_heaviest_when_the_first_is_given_few_layers() -> None:
    """--decoder-first-pipeline-num-layers 2 of 32 over PP 4: stage 1 has 10 layers and 3 micro-batches in
    flight, more than the first (2 layers, 4 in flight) or the last (10 layers, 1 in flight, the logits)."""
    c = CONFIGS[0]
    model = replace(shape(c), layers=32, moe_pattern=(False,) * 32)
    t = replace(training(c), split=Split(tp=1, pp=4, first_stage_layers=2), world=4)
    shard, terms = actor.heaviest(model, t)
    assert (shard.stage, shard.layers) == (1, 10)
    assert sum(x.bytes or 0.0 for x in terms) == held(model, t, 1)
    assert held(model, t, 1) > max(held(model, t, 0), held(model, t, 3))
