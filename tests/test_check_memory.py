"""P8, P9: weights against the GPU's memory, for two models computed by hand (tests/test_weights.py)."""

from __future__ import annotations

from runner import check, pipeline
from tests.test_model import MINIMAL
from tests.test_weights import GLM5_EXPERTS, GLM5_OTHER, QWEN3_EXPERTS, QWEN3_OTHER


def memory_problems(
    write, model: str, hardware: str, args: str, cluster: str = "gpus_per_node: 8"
) -> list[str]:
    spec = MINIMAL.replace("glm5-744B-A40B_4layer", model).replace("h200", hardware)
    spec = spec.replace("gpus_per_node: 8", cluster) + args
    cell = pipeline.cell(write("spec.yaml", spec))
    return [str(p) for p in check.run(cell) if p.rule in ("P8", "P9")]


GLM5_ON_8 = """args:
  misc: {colocate: true}
  perf: {tensor-model-parallel-size: 4, expert-model-parallel-size: 8, expert-tensor-parallel-size: 1}
  sglang: {rollout-num-gpus-per-engine: 8, sglang-mem-fraction-static: 0.7}
"""


def test_glm5_on_one_h200_node_fits_neither_side(write):
    # rollout: (724.8 + 13.3) B x 2 bytes / 8 GPUs = 184.5 GB > 141 GB x 0.7 = 98.7 GB; 1476.1 / 98.7 -> 15 GPUs
    assert round((GLM5_EXPERTS + GLM5_OTHER) * 2 / 8 / 1e9, 1) == 184.5
    # actor: 13.3 B / (TP 4 x PP 1) + 724.8 B / (EP 8 x ETP 1 x PP 1), x 2 bytes = 187.8 GB > 141 GB
    assert round((GLM5_OTHER / 4 + GLM5_EXPERTS / 8) * 2 / 1e9, 1) == 187.8
    assert memory_problems(write, "glm5-744B-A40B", "h200", GLM5_ON_8) == [
        "spec.yaml:8: warning [P8] args.sglang.rollout-num-gpus-per-engine: a rollout engine's weights do not"
        " fit its GPUs: at least 738.0 B parameters (MODEL_ARGS of glm5-744B-A40B) x 2 bytes (bf16; no flag names"
        " a quantized checkpoint) / 8 GPUs of an engine (tp x pp) = 184.5 GB per GPU, more than SGLang's static"
        " memory on h200: 141 GB x sglang-mem-fraction-static 0.7 = 98.7 GB\n"
        '  ==> SGLang stops at start ("Not enough memory"): give an engine at least 15 GPUs'
        " (rollout-num-gpus-per-engine) or a quantized rollout checkpoint; the KV cache needs room too",
        "spec.yaml:7: warning [P9] args.perf.tensor-model-parallel-size: the actor's weights do not fit a GPU:"
        " at least 13.3 B parameters / (TP 4 x PP 1) + 724.8 B expert parameters / (EP 8 x ETP 1 x PP 1),"
        " x 2 bytes (bf16) = 187.8 GB per GPU (MODEL_ARGS of glm5-744B-A40B), more than h200's 141 GB\n"
        "  ==> Megatron runs out of memory at its first step: raise TP, PP or EP; gradients, optimizer state"
        " and activations need room too",
    ]


def test_glm5_on_four_nodes_fits(write):
    # 32 GPUs an engine: 1476.1 GB / 32 = 46.1 GB <= 98.7; the actor with EP 32: 3.3 + 45.3 GB <= 141
    args = GLM5_ON_8.replace("8, expert-tensor", "32, expert-tensor").replace("engine: 8", "engine: 32")
    spec = args.replace("args:\n", "args:\n  ckpt: {actor-num-nodes: 4}\n")
    assert memory_problems(write, "glm5-744B-A40B", "h200", spec, "nodes: 4, gpus_per_node: 8") == []


def test_qwen3_30b_on_one_h100_gpu_engine(write):
    # 30.0 B x 2 bytes / 1 GPU = 60.0 GB > 80 GB x 0.7 = 56 GB; with 0.8 (64 GB) it fits
    assert round((QWEN3_EXPERTS + QWEN3_OTHER) * 2 / 1e9, 1) == 60.0
    args = "args:\n  misc: {colocate: true}\n  sglang: {sglang-mem-fraction-static: 0.7}\n"
    found = memory_problems(write, "qwen3-30B-A3B", "h100", args)
    assert len(found) == 1 and found[0].startswith(
        "spec.yaml:7: warning [P8] args.sglang.sglang-mem-fraction-static: a rollout engine's weights"
    )
    assert (
        "= 60.0 GB per GPU, more than SGLang's static memory on h100: 80 GB x sglang-mem-fraction-static 0.7 = 56.0 GB"
        in found[0]
    )
    assert "give an engine at least 2 GPUs" in found[0]
    assert memory_problems(write, "qwen3-30B-A3B", "h100", args.replace("0.7", "0.8")) == []


def test_qwen3_30b_actor_beside_engines_kept_in_memory(write):
    # colocated, --no-offload-rollout: Megatron gets 80 GB x (1 - 0.7) = 24 GB; one GPU holds 60.0 GB
    args = (
        "args:\n  misc: {colocate: true, no-offload-rollout: true}\n"
        "  ckpt: {actor-num-gpus-per-node: 1}\n  sglang: {sglang-mem-fraction-static: 0.8}\n"
    )
    (found,) = memory_problems(write, "qwen3-30B-A3B", "h100", args, "gpus_per_node: 1")
    assert found.split("\n")[0].endswith(
        "x 2 bytes (bf16) = 60.0 GB per GPU (MODEL_ARGS of qwen3-30B-A3B), more than what SGLang's engines"
        " leave on h100: 80 GB x (1 - sglang-mem-fraction-static 0.8) = 16.0 GB (colocated, --no-offload-rollout)"
    )


def test_a_quantized_rollout_counts_the_fewest_bytes(write):
    args = "args:\n  misc: {colocate: true}\n  ckpt: {hf-checkpoint: /root/Qwen3-30B-A3B-INT4}\n"
    args += "  sglang: {sglang-mem-fraction-static: 0.7}\n"
    assert memory_problems(write, "qwen3-30B-A3B", "h100", args) == []  # 30.0 B x 0.5 bytes = 15.0 GB
