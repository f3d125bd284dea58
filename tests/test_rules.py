"""One test per rule: overlays on the shipped GLM-5 specs, whole messages asserted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.cells.layout import describe, layout
from runner.check.choices import ONE_OF
from runner.errors import SpecError
from runner.spec import locate

MATRICES = locate.BUNDLED_MATRICES
ROCM = MATRICES / "rocm" / "glm5-async.yaml"
NV = MATRICES / "nv" / "glm5-colocate.yaml"
PRESET = (
    MATRICES.parent / "miles/models/2026-05-13-dc8b499b/glm5-744B-A40B_4layer.yaml"
)  # the GLM-5 base targets dc8b499b


def problems(write, base: Path, overlay: str, *, only: str = "") -> list[str]:
    cell = pipeline.cell(write("spec.yaml", f"extends: {base}\n{overlay}"))
    found = [p for p in check.run(cell) if p.rule.startswith(only)] if only else list(check.run(cell))
    return [str(p) for p in found]


def rules(write, base: Path, overlay: str) -> list[str]:
    cell = pipeline.cell(write("spec.yaml", f"extends: {base}\n{overlay}"))
    return [f"{p.severity[0]}:{p.rule}" for p in check.run(cell)]


@pytest.mark.parametrize("spec", [NV, ROCM])
def test_shipped_specs_are_clean(spec: Path) -> None:
    assert list(check.run(pipeline.cell(spec))) == []


# --- miles PR 1124 -----------------------------------------------------------------------------


def test_pr1124_rocm_engine_is_accepted_and_explained() -> None:
    cell = pipeline.cell(ROCM)
    assert list(check.run(cell)) == []
    assert describe(layout(cell))["engine"] == (
        "2 GPUs; DP-attention: 2 attention-DP ranks x attention-TP 2/2 = 1;"
        " MoE: EP 2 x MoE-TP 2/2 = 1 (128 experts per EP rank)"
    )
    assert describe(layout(cell))["rollout"] == "4 GPUs -> 2 engines x 2 GPUs (tp 2)"


def test_pr1124_without_dp_attention_is_l5(write) -> None:
    assert problems(write, ROCM, "args:\n  sglang:\n    sglang-enable-dp-attention: !delete\n") == [
        f"{_rel(ROCM)}:38: error [L5] args.sglang.sglang-dp-size: sglang-dp-size 2 without"
        " --sglang-enable-dp-attention: miles asserts at start-up. Without DP-attention each DP rank is a whole"
        " engine, tp x dp x pp = 2 x 2 x 1 = 4 GPUs, not the 2 miles gives an engine\n"
        f"  ==> also at {_rel(ROCM)}:37 (args.sglang.rollout-num-gpus-per-engine)\n"
        "  ==> add sglang-enable-dp-attention (then dp 2 splits the engine's 2 GPUs into attention-TP 2/2),"
        " or set sglang-dp-size 1"
    ]


def test_pr1124_dp4_is_s3(write) -> None:
    assert problems(write, ROCM, "args:\n  sglang:\n    sglang-dp-size: 4\n") == [
        "spec.yaml:4: error [S3] args.sglang.sglang-dp-size: rollout engine has 2 GPUs (tp = 2); sglang-dp-size 4"
        " does not divide it with DP-attention: attention TP would be 2/4\n"
        f"  ==> also at {_rel(ROCM)}:37 (args.sglang.rollout-num-gpus-per-engine)\n"
        "  ==> use dp 1 or 2"
    ]


def test_pr1124_ep3_is_s7_and_s8(write) -> None:
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-ep-size: 3\n") == ["e:S7", "e:S8"]
    assert problems(write, ROCM, "args:\n  sglang:\n    sglang-ep-size: 3\n", only="S8") == [
        "spec.yaml:4: error [S8] args.sglang.sglang-ep-size: 256 experts do not split over sglang-ep-size 3\n"
        f"  ==> also at {_rel(PRESET)}:12 (model_args.num-experts)\n"
        "  ==> use an ep that divides 256"
    ]


def test_pr1124_actor_ep3_is_m3(write) -> None:
    found = rules(write, ROCM, "args:\n  perf:\n    expert-model-parallel-size: 3\n")
    assert "e:M3" in found and "e:M2" in found  # 4 GPUs do not split into EP 3 either
    assert problems(write, ROCM, "args:\n  perf:\n    expert-model-parallel-size: 3\n", only="M3") == [
        'spec.yaml:4: error [M3] args.perf.expert-model-parallel-size: "Number of experts should be a multiple of'
        ' expert model parallel_size.": 256 experts, EP 3\n'
        f"  ==> also at {_rel(PRESET)}:12 (model_args.num-experts)\n"
        "  ==> use an EP that divides 256"
    ]


def test_pr1124_deepep_on_mi355x_is_p1(write) -> None:
    overlay = "args:\n  misc:\n    moe-enable-deepep: true\n    moe-token-dispatcher-type: flex\n"
    assert rules(write, ROCM, overlay) == ["e:P1", "e:P5", "w:G5"]
    assert problems(write, ROCM, overlay, only="P1") == [
        "spec.yaml:4: error [P1] args.misc.moe-enable-deepep: mi355x has no DeepEP (it needs NVIDIA InfiniBand +"
        " GPUDirect RDMA)\n  ==> delete moe-enable-deepep and use moe-token-dispatcher-type: alltoall"
    ]


def test_a_new_profile_changes_the_verdict_without_code(write) -> None:
    profile = MATRICES / "hardware" / "mi355x.yaml"
    write("hardware/mi999x.yaml", f"extends: {profile}\nname: mi999x\nsupports:\n  deepep: true\n")
    overlay = "hardware: mi999x\nargs:\n  misc:\n    moe-enable-deepep: true\n    moe-token-dispatcher-type: alltoall\n"
    assert rules(write, ROCM, overlay) == ["e:M10", "w:G5"]


# --- placement ---------------------------------------------------------------------------------


def test_l1_rollout_gpus_ignored_when_colocated(write) -> None:
    assert problems(write, NV, "args:\n  sglang:\n    rollout-num-gpus: 4\n") == [
        "spec.yaml:4: warning [L1] args.sglang.rollout-num-gpus: --rollout-num-gpus 4 has no effect with"
        " --colocate: the engines use the 8 training GPUs\n"
        f"  ==> also at {_rel(NV)}:58 (args.misc.colocate)\n  ==> delete --rollout-num-gpus"
    ]


def test_l2_async_rejects_colocate(write) -> None:
    assert rules(
        write,
        NV,
        "launch:\n  script: train_async.py\nargs:\n  misc:\n    disable-weights-backuper: !delete\n",
    ) == ["e:L2"]


def test_l3_budget(write) -> None:
    assert problems(write, ROCM, "args:\n  sglang:\n    rollout-num-gpus: 6\n", only="L3") == [
        # headlined at the overlay's line, then every key the budget was derived from, newest first
        "spec.yaml:4: error [L3] args.sglang.rollout-num-gpus: needs actor 4 + rollout 6 = 10 GPUs but"
        " the cluster has 1 node x 8 GPUs = 8: Ray's placement group would wait forever\n"
        f"  ==> also at {_rel(ROCM)}:54 (args.misc.actor-num-gpus-per-node)\n"
        f"  ==> also at {_rel(MATRICES / 'base/glm5-744b-a40b-4layer.yaml')}:18 (cluster.gpus_per_node)\n"
        f"  ==> also at {_rel(MATRICES / 'base/glm5-744b-a40b-4layer.yaml')}:117 (args.misc.actor-num-nodes)\n"
        f"  ==> also at {_rel(MATRICES / 'base/glm5-744b-a40b-4layer.yaml')}:17 (cluster.nodes)\n"
        "  ==> shrink the actor or the rollout, or raise cluster.nodes"
    ]
    assert rules(write, ROCM, "args:\n  sglang:\n    rollout-num-gpus: 2\n") == ["w:L3"]
    assert rules(write, ROCM, "args:\n  sglang:\n    rollout-num-gpus: !delete\n") == ["e:L3"]
    assert rules(write, ROCM, "args:\n  misc:\n    num-gpus-per-node: 4\n") == ["e:L3"]


def test_l3_a_critic_has_gpus_of_its_own_before_miles_main_and_the_actors_at_main(write) -> None:
    ppo = "args:\n  grpo:\n    advantage-estimator: ppo\n"
    assert [p.splitlines()[0] for p in problems(write, ROCM, ppo, only="L3")] == [
        "spec.yaml:4: error [L3] args.grpo.advantage-estimator: needs actor 4 + critic 4 + rollout 4 = 12"
        " GPUs but the cluster has 1 node x 8 GPUs = 8: Ray's placement group would wait forever"
    ]
    # miles/ray/placement_group.py at 31f1ca96: result["critic"] = result["actor"]
    assert problems(write, ROCM, ppo + "miles_version: 31f1ca96\n", only="L3") == []


def test_l3_miles_mains_eval_fleet_has_gpus_of_its_own(write) -> None:
    """miles/ray/placement_group.py at 31f1ca96: actor + rollout + --eval-num-gpus, unless colocated."""
    main = "miles_version: 31f1ca96\n"
    fleet = main + "args:\n  sglang:\n    rollout-num-gpus: 3\n  misc:\n    eval-num-gpus: 1\n"
    assert problems(write, ROCM, fleet, only="L3") == []  # 4 + 3 + 1: the 8 GPUs, none idle
    over = fleet.replace("gpus: 3", "gpus: 4")
    assert [p.splitlines()[0] for p in problems(write, ROCM, over, only="L3")] == [
        "spec.yaml:5: error [L3] args.sglang.rollout-num-gpus: needs actor 4 + rollout 4 + eval fleet 1 = 9"
        " GPUs but the cluster has 1 node x 8 GPUs = 8: Ray's placement group would wait forever"
    ]
    assert rules(write, ROCM, main + "args:\n  sglang:\n    rollout-num-gpus: 3\n") == ["w:L3", "w:L4"]
    external = main + "args:\n  sglang:\n    rollout-num-gpus: 2\n  misc:\n    eval-function-path: a.Eval\n"
    assert [p.splitlines()[0] for p in problems(write, ROCM, external, only="L3")] == [
        "spec.yaml:5: warning [L3] args.sglang.rollout-num-gpus: uses actor 4 + rollout 2 = 6 of the 1 node"
        " x 8 GPUs = 8 GPUs; 2 stay idle in Ray's placement group; the function of --eval-function-path"
        " (a.Eval) may use them"
    ]


def test_l4_engines(write) -> None:
    assert rules(write, ROCM, "args:\n  sglang:\n    rollout-num-gpus: 3\n") == ["w:L3", "w:L4"]
    assert rules(write, ROCM, "args:\n  sglang:\n    rollout-num-gpus: 1\n") == ["w:L3", "e:L4"]


def test_l6_l7_requirements(write) -> None:
    assert rules(write, ROCM, "args:\n  perf:\n    max-tokens-per-gpu: !delete\n") == ["e:L6"]
    assert rules(write, ROCM, "args:\n  ckpt:\n    save: !delete\n") == ["e:L7"]


def test_l8_to_l11(write) -> None:
    assert rules(write, NV, "args:\n  misc:\n    update-weight-transfer-mode: p2p\n") == ["e:L8"]
    assert rules(write, NV, "args:\n  misc:\n    update-weights-interval: 2\n") == ["w:L9"]
    assert rules(write, ROCM, "args:\n  misc:\n    disable-weights-backuper: true\n") == ["e:L10", "w:G5"]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-tp-size: 8\n") == ["w:L11"]


def test_l12_hf_config_cross_check(write, tmp_path: Path) -> None:
    checkpoint = tmp_path / "GLM-5_4layer"
    checkpoint.mkdir()
    config = {
        "hidden_size": 6144,
        "num_attention_heads": 64,
        "num_hidden_layers": 4,
        "intermediate_size": 12288,
        "tie_word_embeddings": False,
        "rope_parameters": {"rope_theta": 1000000},
    }
    (checkpoint / "config.json").write_text(json.dumps(config))
    overlay = f"vars:\n  hf_checkpoint: {checkpoint}\n"
    assert rules(write, ROCM, overlay) == []
    (checkpoint / "config.json").write_text(
        json.dumps({**config, "num_hidden_layers": 78, "tie_word_embeddings": True})
    )
    assert problems(write, ROCM, overlay, only="L12") == [
        f"{_rel(PRESET)}:27: error [L12] model_args.num-layers:"
        ' config.json has num_hidden_layers = 78 but --num-layers is 4: miles stops with "hf_validate_args failed"\n'
        "  ==> point hf-checkpoint at the model the flags describe, or fix the flags",
        f"{_rel(PRESET)}:33: error [L12]"
        " model_args.untie-embeddings-and-output-weights: config.json has tied embeddings (tie_word_embeddings ="
        " True) but --untie-embeddings-and-output-weights says otherwise",
    ]


def test_l13_l14(write) -> None:
    assert rules(write, ROCM, "args:\n  grpo:\n    kl-coef: 0.1\n    kl-loss-coef: 0.1\n") == ["e:L13"]
    assert rules(write, ROCM, "args:\n  ckpt:\n    ref-load: !delete\n  grpo:\n    kl-coef: 0.1\n") == [
        "e:L13"
    ]
    assert rules(write, ROCM, "args:\n  misc:\n    offload-rollout: true\n") == ["e:L14"]


# --- SGLang engine -----------------------------------------------------------------------------


def test_s2_s16_s17_multi_node_engines(write) -> None:
    assert rules(write, ROCM, "args:\n  sglang:\n    rollout-num-gpus-per-engine: 12\n") == [
        "e:L4",
        "e:S8",
        "e:S14",
        "e:S17",
    ]
    # 17 GPUs: miles spans 17 // 8 = 2 nodes, and 17 does not split over 2 nodes.
    assert "e:S2" in rules(
        write,
        ROCM,
        "cluster:\n  nodes: 3\nargs:\n  sglang:\n    rollout-num-gpus: 17\n"
        "    rollout-num-gpus-per-engine: 17\n",
    )
    two_nodes = (
        "cluster:\n  nodes: 3\nargs:\n  sglang:\n    rollout-num-gpus: 16\n    rollout-num-gpus-per-engine: 16\n"
        "    sglang-enable-dp-attention: false\n  misc:\n    actor-num-nodes: 1\n"
    )
    assert rules(write, ROCM, two_nodes) == ["w:L3", "e:L5", "e:S16"]


def test_s4_s5_s10(write) -> None:
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-dp-size: 1\n") == ["w:S4"]
    # the ROCm spec says why it leaves dp-lm-head out; an overlay that sets it drops that reason (else G5)
    lm_head = (
        "    sglang-enable-dp-lm-head: true\nwhy_not:\n  args.sglang.sglang-enable-dp-lm-head: !delete\n"
    )
    # dp 1 turns dp-lm-head off before SGLang would complain about it (S4 before S5).
    assert rules(
        write,
        ROCM,
        "args:\n  sglang:\n    sglang-enable-dp-attention: false\n    sglang-dp-size: 1\n" + lm_head,
    ) == ["w:S4"]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-enable-dp-attention: false\n" + lm_head) == [
        "e:L5",
        "e:S5",
    ]
    assert rules(write, NV, "args:\n  sglang:\n    sglang-moe-dense-tp-size: 2\n") == ["e:S10"]


def test_s10_at_miles_main_also_takes_the_engines_tp(write) -> None:
    """SGLang 0.5.16 (miles main's stack) accepts moe_dense_tp_size = tp_size; 0.5.10 only 1."""
    main = "miles_version: 31f1ca96\nargs:\n  sglang:\n    sglang-moe-dense-tp-size: {}\n"
    assert rules(write, MATRICES / "nv" / "glm5-main.yaml", main.format(8)) == []
    assert problems(write, MATRICES / "nv" / "glm5-main.yaml", main.format(2)) == [
        "spec.yaml:5: error [S10] args.sglang.sglang-moe-dense-tp-size: sglang-moe-dense-tp-size 2 on an engine of"
        ' tp 8: "moe_dense_tp_size only supports None, 1, or tp_size currently"\n'
        f"  ==> also at {_rel(NV)}:35 (args.sglang.rollout-num-gpus-per-engine)\n"
        f"  ==> also at {_rel(NV.parent.parent / 'base' / 'glm5-744b-a40b-4layer.yaml')}:18 (cluster.gpus_per_node)\n"
        "  ==> set it to 1 or 8, or delete it"
    ]
    assert rules(write, NV, "args:\n  sglang:\n    sglang-moe-dense-tp-size: 8\n") == ["e:S10"]


def test_s6_chunked_prefill_and_pages(write) -> None:
    assert rules(write, NV, "args:\n  sglang:\n    sglang-chunked-prefill-size: 16000\n") == ["e:S6"]
    assert problems(write, NV, "args:\n  sglang:\n    sglang-chunked-prefill-size: 1000\n") == [
        "spec.yaml:4: error [S6] args.sglang.sglang-chunked-prefill-size: chunked prefill 1000 / dp 8 = 125 is not"
        ' a multiple of page size 64: "chunked_prefill_size must be divisible by page_size"\n'
        f"  ==> also at {_rel(NV)}:40 (args.sglang.sglang-page-size)\n  ==> use a chunked prefill size divisible by 512"
    ]


def test_s9_s11_s12(write) -> None:
    assert rules(
        write, NV, "args:\n  sglang:\n    sglang-moe-a2a-backend: deepep\n    sglang-ep-size: 4\n"
    ) == ["w:S9"]
    assert rules(write, NV, "args:\n  sglang:\n    sglang-page-size: 1\n") == ["w:S11"]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-kv-cache-dtype: fp8_e5m2\n") == ["e:S11"]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-nsa-decode-backend: flash\n") == ["e:S12", "e:P2"]


def test_s9_an_overridden_ep_is_not_judged_by_s7_or_s8(write) -> None:
    """SGLang sets ep = tp under DeepEP before anything splits (miles main's test_r3_mtp_deepep.py:
    ep 8 on a 4-GPU engine): only S9's warning is left, and the facts show the ep SGLang runs."""
    overlay = (
        "args:\n  sglang:\n    rollout-num-gpus-per-engine: 4\n    sglang-dp-size: 4\n"
        "    sglang-moe-a2a-backend: deepep\n    sglang-ep-size: 8\n"
    )
    found = problems(write, NV, overlay)
    assert found == [
        "spec.yaml:7: warning [S9] args.sglang.sglang-ep-size: --sglang-moe-a2a-backend deepep forces"
        " ep = tp = 4; sglang-ep-size 8 is overridden\n"
        "  ==> also at spec.yaml:6 (args.sglang.sglang-moe-a2a-backend)\n  ==> set sglang-ep-size 4"
    ]
    cell = pipeline.cell(write("spec.yaml", f"extends: {NV}\n{overlay}"))
    assert layout(cell).engine.ep == 4
    # without the a2a backend, ep 8 on 4 GPUs is S7's (and the given value is the one SGLang runs)
    assert rules(write, NV, overlay.replace("    sglang-moe-a2a-backend: deepep\n", "")) == ["e:S7"]


def test_s13_flashmla_sparse_head_padding(write) -> None:
    # 64 heads / attention-TP 3 is not even an integer: S3 and S14; attention-TP 2 on Hopper pads 32 to 64: fine.
    assert rules(write, NV, "args:\n  sglang:\n    sglang-dp-size: 4\n") == []
    profile = MATRICES / "hardware" / "h200.yaml"
    write("hardware/h999.yaml", f"extends: {profile}\nname: h999\nsupports:\n  flashmla_sparse_heads: 48\n")
    assert rules(write, NV, "hardware: h999\nargs:\n  sglang:\n    sglang-dp-size: 4\n") == ["e:S13"]


def test_s14_heads_over_attention_tp(write) -> None:
    assert (
        rules(
            write,
            NV,
            "args:\n  sglang:\n    sglang-enable-dp-attention: false\n    sglang-dp-size: 1\n"
            "    sglang-enable-dp-lm-head: !delete\n    rollout-num-gpus-per-engine: 8\n",
        )
        == []
    )
    assert "e:S14" in rules(
        write,
        ROCM,
        "args:\n  sglang:\n    rollout-num-gpus-per-engine: 3\n    sglang-dp-size: 1\n"
        "    sglang-ep-size: 1\n    rollout-num-gpus: 3\n",
    )


# --- Megatron actor ----------------------------------------------------------------------------


def test_m1_m2_m4(write) -> None:
    assert rules(write, NV, "args:\n  perf:\n    tensor-model-parallel-size: 3\n") == ["e:M1", "e:M4"]
    assert "e:M4" in rules(write, NV, "args:\n  perf:\n    tensor-model-parallel-size: 3\n")
    assert rules(write, NV, "args:\n  perf:\n    expert-tensor-parallel-size: 2\n") == ["e:M2"]


def test_m6_m7_m8(write) -> None:
    assert rules(write, NV, "args:\n  perf:\n    seq-length: 4094\n") == ["e:M6"]
    assert rules(write, ROCM, "args:\n  perf:\n    sequence-parallel: true\n") == ["w:M7", "w:G5"]
    assert rules(write, NV, "args:\n  perf:\n    sequence-parallel: !delete\n") == ["w:M7"]
    assert rules(write, ROCM, "args:\n  perf:\n    pipeline-model-parallel-size: 3\n")[:1] == ["e:M1"]
    assert "e:M8" in rules(write, ROCM, "args:\n  perf:\n    pipeline-model-parallel-size: 3\n")


def test_m9_m10_m11_m12_m13(write) -> None:
    assert rules(write, ROCM, "args:\n  optimizer:\n    use-precision-aware-optimizer: !delete\n") == ["e:M9"]
    assert rules(write, ROCM, "args:\n  optimizer:\n    optimizer: sgd\n") == ["e:M9"]
    assert rules(write, NV, "args:\n  misc:\n    moe-token-dispatcher-type: alltoall\n") == ["e:M10"]
    assert rules(write, NV, "args:\n  perf:\n    expert-model-parallel-size: 1\n") == ["e:M11"]
    assert rules(write, ROCM, "args:\n  misc:\n    moe-token-dispatcher-type: bogus\n") == ["e:M12"]
    assert rules(write, ROCM, "args:\n  misc:\n    attention-backend: bogus\n") == ["e:M13", "e:P3"]


def test_m14_global_batch(write) -> None:
    assert problems(write, ROCM, "args:\n  rollout:\n    global-batch-size: 63\n") == [
        "spec.yaml:4: error [M14] args.rollout.global-batch-size: global batch size 63 is not divisible by micro"
        " batch 1 x actor DP 4 (DP = 4 / (TP x PP x CP))\n"
        f"  ==> also at {_rel(ROCM)}:54 (args.misc.actor-num-gpus-per-node)\n"
        f"  ==> also at {_rel(ROCM)}:26 (args.perf.tensor-model-parallel-size)\n"
        f"  ==> also at {_rel(ROCM)}:27 (args.perf.context-parallel-size)\n"
        f"  ==> also at {_rel(MATRICES / 'base/glm5-744b-a40b-4layer.yaml')}:117 (args.misc.actor-num-nodes)\n"
        "  ==> and 3 more: cluster.nodes, cluster.gpus_per_node, args.perf.pipeline-model-parallel-size\n"
        "  ==> use a multiple of 4"
    ]


def test_a_derived_value_brings_the_users_line(write) -> None:
    # EP and DP are ${...} of actor-num-gpus-per-node: both problems are headlined where the user set it
    found = problems(write, ROCM, "args:\n  misc:\n    actor-num-gpus-per-node: 6\n")
    assert [p.splitlines()[0].split(": ")[:2] for p in found] == [
        ["spec.yaml:4", "error [M3] args.misc.actor-num-gpus-per-node"],
        ["spec.yaml:4", "error [M14] args.misc.actor-num-gpus-per-node"],
    ]
    assert f"  ==> also at {_rel(ROCM)}:28 (args.perf.expert-model-parallel-size)" in found[0]


def test_m15_device_max_connections(write) -> None:
    assert rules(write, NV, "env:\n  CUDA_DEVICE_MAX_CONNECTIONS: '8'\n") == ["e:M15"]


# --- platform ----------------------------------------------------------------------------------


def test_platform_capabilities(write) -> None:
    assert rules(write, ROCM, "args:\n  misc:\n    attention-backend: flash\n") == ["e:P3"]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-disable-custom-all-reduce: !delete\n") == ["e:P4"]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-nsa-prefill-backend: flashmla_sparse\n") == [
        "e:P2"
    ]
    assert rules(write, ROCM, "args:\n  sglang:\n    sglang-attention-backend: fa3\n") == ["e:P6"]
    assert rules(write, NV, "env:\n  HIP_VISIBLE_DEVICES: '0'\n") == ["w:P7"]


def test_g4_integer_flags(write) -> None:
    assert problems(write, ROCM, "args:\n  perf:\n    tensor-model-parallel-size: one\n") == [
        "spec.yaml:4: error [G4] args.perf.tensor-model-parallel-size: --tensor-model-parallel-size takes an"
        " integer, got 'one'"
    ]


def _rel(path: Path) -> str:
    from runner.errors import display_path

    return display_path(path)


@pytest.mark.parametrize(
    ("overlay", "expected"),
    [
        (
            "args:\n  misc:\n    moe-token-dispatcher-type: bogus\n",
            [
                "spec.yaml:4: error [M12] args.misc.moe-token-dispatcher-type: --moe-token-dispatcher-type bogus:"
                " invalid choice\n  ==> use one of: allgather, alltoall, flex"
            ],
        ),
        (
            "args:\n  misc:\n    attention-backend: bogus\n",
            [
                "spec.yaml:4: error [M13] args.misc.attention-backend: --attention-backend bogus: invalid choice\n"
                "  ==> use one of: flash, fused, unfused, local, auto",
                "spec.yaml:4: error [P3] args.misc.attention-backend: --attention-backend bogus is not available on"
                " mi355x with the miles-dc8b499b stack (lmsysorg/sglang:v0.5.10-rocm720-mi35x + sglang-miles"
                " (docker/Dockerfile.rocm_MI350-5); ROCm/TransformerEngine v2.8_rocm, NVTE_FUSED_ATTN=0 baked into"
                " the image) (Transformer Engine there supports fused, unfused, local, auto)\n  ==> use fused",
            ],
        ),
        (
            "args:\n  sglang:\n    sglang-nsa-decode-backend: flash\n",
            [
                "spec.yaml:4: error [S12] args.sglang.sglang-nsa-decode-backend: --sglang-nsa-decode-backend flash"
                " is not an NSA backend\n  ==> use one of: flashmla_sparse, flashmla_kv, flashmla_auto, fa3,"
                " tilelang, aiter, trtllm",
                "spec.yaml:4: error [P2] args.sglang.sglang-nsa-decode-backend: mi355x has no flash NSA kernels"
                " (rocm supports tilelang, aiter)\n  ==> use tilelang",
            ],
        ),
        (
            "args:\n  sglang:\n    sglang-attention-backend: fa3\n",
            [
                "spec.yaml:4: error [P6] args.sglang.sglang-attention-backend: SGLang attention backend fa3 is not"
                " available on mi355x (supported: aiter, triton, nsa, torch_native)"
            ],
        ),
        (
            "args:\n  misc:\n    moe-token-dispatcher-type: flex\n",
            [
                "spec.yaml:4: error [P5] args.misc.moe-token-dispatcher-type: the flex token dispatcher is not"
                " available on mi355x (supported: allgather, alltoall)\n  ==> use alltoall"
            ],
        ),
    ],
)
def test_the_one_of_table_says_what_is_allowed_and_where_it_comes_from(write, overlay, expected):
    table_rules = [p for p in problems(write, ROCM, overlay) if re.search(r"\[(\w+)\]", p)[1] in ONE_OF]
    assert table_rules == expected


MAIN = MATRICES / "nv" / "glm5-main-ci.yaml"  # the GLM-5 CI test at miles main (31f1ca96)
SESSION_CHECK = "miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics"


def test_l15_verify_calls_a_check_the_targeted_miles_offers_with_its_parameters(write) -> None:
    good = f"verify:\n  s:\n    call: {SESSION_CHECK}\n    args: {{metrics_path: /tmp/m.jsonl, assistant_text_threshold: 0.2}}\n"
    assert problems(write, MAIN, good, only="L15") == []
    # the PR head's session_verify_runner keeps its check private: no spec may call it there
    assert problems(write, ROCM, good, only="L15") == [
        "spec.yaml:3: error [L15] verify.s.call: miles dc8b499b offers no check"
        f" {SESSION_CHECK} (it offers: none)\n"
        "  ==> name one of them, or a function a test of the checkout defines (PATH.py:function)"
    ]
    typo = f"verify:\n  s:\n    call: {SESSION_CHECK}\n    args: {{metrics_pth: /tmp/m.jsonl}}\n"
    assert problems(write, MAIN, typo, only="L15") == [
        "spec.yaml:3: error [L15] verify.s.args: assert_session_verify_metrics() takes metrics_path,"
        " assistant_text_threshold; no parameter metrics_pth; metrics_path, assistant_text_threshold not given\n"
        f"  ==> {SESSION_CHECK} is called with exactly these keyword arguments after the job"
    ]
    unknown = "verify:\n  s:\n    call: os.system\n"
    (found,) = problems(write, MAIN, unknown, only="L15")
    assert found.startswith(
        "spec.yaml:3: error [L15] verify.s.call: miles 31f1ca96 offers no check os.system"
    )


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (
            "os.system('rm -rf /')",
            "\"os.system('rm -rf /')\" is no dotted name (module.function of a check miles offers) and no"
            " PATH.py:function (a function of a test of the checkout)",
        ),
        (
            "compare_metrics",
            "'compare_metrics' is no dotted name (module.function of a check miles offers) and no"
            " PATH.py:function (a function of a test of the checkout)",
        ),
        (
            "a..b",
            "'a..b' is no dotted name (module.function of a check miles offers) and no PATH.py:function (a"
            " function of a test of the checkout)",
        ),
        (
            ".a.b",
            "'.a.b' is no dotted name (module.function of a check miles offers) and no PATH.py:function (a"
            " function of a test of the checkout)",
        ),
        (
            "../miles/x.py:f",
            "'../miles/x.py:f' leaves the checkout (..): name a file inside it, relative to its root",
        ),
        (
            "tests/../../x.py:f",
            "'tests/../../x.py:f' leaves the checkout (..): name a file inside it, relative to its root",
        ),
        (
            "/etc/x.py:f",
            "'/etc/x.py:f' is an absolute path: name the file relative to the checkout's root"
            " (tests/e2e/...)",
        ),
        ("tests/x.txt:f", "'tests/x.txt:f' names no .py file"),
        ("tests/x.py:f:g", "'tests/x.py:f:g' holds more than one colon (PATH.py:function has one)"),
        (
            "tests/x.py:os.system",
            "'tests/x.py:os.system' names no function after the colon ('os.system' is no Python name)",
        ),
        (
            "tests/$(touch x).py:f",
            "'tests/$(touch x).py:f' holds a name that is empty, hidden or has characters"
            " other than letters, digits and _.+- (nothing a shell would expand)",
        ),
        (
            "tests//x.py:f",
            "'tests//x.py:f' holds a name that is empty, hidden or has characters other than"
            " letters, digits and _.+- (nothing a shell would expand)",
        ),
    ],
)
def test_a_verify_call_is_a_dotted_name_or_a_path_in_the_checkout_and_nothing_else(write, call, why) -> None:
    spec = write("spec.yaml", f"extends: {MAIN}\nverify:\n  s:\n    call: {json.dumps(call)}\n")
    with pytest.raises(SpecError) as caught:
        pipeline.cell(spec)
    (problem,) = caught.value.problems
    assert (problem.key, problem.locations[0].line, problem.message) == ("verify.s.call", 4, why)


def test_debug_train_only_starts_no_engines_so_it_needs_no_rollout_gpus(write) -> None:
    overlay = "args:\n  misc:\n    debug-train-only: true\n  sglang:\n    rollout-num-gpus: !delete\n"
    assert rules(write, ROCM, overlay.replace("debug-train-only: true", "debug-train-only: false")) == [
        "e:L3"
    ]
    cell = pipeline.cell(write("spec.yaml", f"extends: {ROCM}\n{overlay}"))
    facts = layout(cell)
    assert (facts.train_only, facts.rollout_gpus, facts.needed_gpus) == (True, 0, 4)
    assert [p.rule for p in check.run(cell) if p.rule.startswith("L")] == ["L3"]  # 4 of 8 GPUs idle


def test_m2_says_etp_defaults_to_tp_only_where_etp_is_not_set(write) -> None:
    (explicit,) = problems(write, NV, "args:\n  perf:\n    expert-tensor-parallel-size: 2\n", only="M2")
    assert "ETP x EP x PP = 2 x 8 x 1 = 16" in explicit and "defaults" not in explicit
    (default,) = problems(write, NV, "args:\n  perf:\n    expert-tensor-parallel-size: !delete\n", only="M2")
    assert "ETP x EP x PP = 4 x 8 x 1 = 32 (ETP defaults to TP)" in default
