from __future__ import annotations

from dataclasses import replace

import pytest

from runner import pipeline
from runner.cells.gpumap import gpu_map
from runner.cells.layout import layout
from runner.errors import SpecError
from runner.spec import locate

ROCM = locate.BUNDLED_MATRICES / "rocm" / "glm5-async.yaml"


def test_two_nodes_async_places_actor_then_rollout(write):
    spec = write(
        "two.yaml",
        f"extends: {ROCM}\ncluster:\n  nodes: 2\nargs:\n  perf:\n    tensor-model-parallel-size: 2\n"
        "    sequence-parallel: true\n  sglang:\n    rollout-num-gpus: 8\n",
    )
    cell = pipeline.cell(spec)
    gpus = gpu_map(layout(cell), cell.location("cluster"))  # actor: 2 nodes x 4 GPUs = 8, TP 2 -> DP 4
    trainer = [(g.node, g.gpu, g.trainer.rank, g.trainer.tp, g.trainer.dp) for g in gpus if g.trainer]
    # the placement group packs: the actor's 8 bundles fill node 0
    assert trainer == [(0, i, i, i % 2, i // 2) for i in range(8)]
    rollout = [(g.node, g.gpu, g.rollout.engine, g.rollout.attention_dp) for g in gpus if g.rollout]
    assert rollout == [(1, i, i // 2, i % 2) for i in range(8)]
    assert all(not (g.trainer and g.rollout) for g in gpus)


def test_colocated_engines_share_the_actor_gpus():
    nv = pipeline.cell(locate.BUNDLED_MATRICES / "nv" / "glm5-colocate.yaml")
    gpus = gpu_map(layout(nv), nv.location("cluster"))
    assert [(g.trainer.rank, g.rollout.rank) for g in gpus] == [(i, i) for i in range(8)]


def test_a_layout_too_large_to_draw_is_refused_before_drawing(write):
    cell = pipeline.cell(locate.BUNDLED_MATRICES / "nv" / "glm5-colocate.yaml")
    huge = replace(layout(cell), nodes=100_000, gpus_per_node=1000)
    with pytest.raises(SpecError) as raised:
        gpu_map(huge, cell.location("cluster"))
    assert str(raised.value) == (
        f"{locate.BUNDLED_MATRICES}/base/glm5-744b-a40b-4layer.yaml:16: error [budget] cluster: "
        "the layout has 100,000,000 GPUs (100000 nodes x 1000); --layout draws at most 4,096\n"
        "  ==> draw a smaller cell; the derived facts without --layout hold for any size"
    )
