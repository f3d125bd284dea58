"""P10, P11, P12 on cells whose numbers are worked out beside each test (runner/memory)."""

from __future__ import annotations

from runner import check, pipeline
from tests.test_model import MINIMAL

GLM5_ON_8 = """args:
  misc: {colocate: true}
  perf: {tensor-model-parallel-size: 4, expert-model-parallel-size: 8, expert-tensor-parallel-size: 1}
  sglang: {rollout-num-gpus-per-engine: 8, sglang-mem-fraction-static: 0.7}
"""
QWEN3_8B = """args:
  misc: {colocate: true}
  perf: {tensor-model-parallel-size: 1, use-dynamic-batch-size: true, max-tokens-per-gpu: 8192}
  rollout: {rollout-max-response-len: 8192, n-samples-per-prompt: 16, rollout-batch-size: 32}
"""


def memory_problems(write, model: str, hardware: str, args: str, cluster: str = "gpus_per_node: 8") -> list[str]:
    spec = MINIMAL.replace("glm5-744B-A40B_4layer", model).replace("h200", hardware)
    cell = pipeline.cell(write("spec.yaml", spec.replace("gpus_per_node: 8", cluster) + args))
    return [str(p) for p in check.run(cell) if p.rule in ("P10", "P11", "P12")]


def test_glm5_on_one_h200_node_fits_neither_side(write):
    # engine: a GPU holds the replicated dense part (13.3 B over attention TP 8 ... ) and 1/8 of the experts:
    # 94.83 B x 2 B = 176.6 GB > 0.7 x 141 GB; actor: 13.3 B / TP 4 + 724.8 B / EP 8 = 100.3 B a GPU,
    # x (2 weights + 4 main grads + 12 optimizer over expert DP 1) = 1589.9 GB
    assert memory_problems(write, "glm5-744B-A40B", "h200", GLM5_ON_8) == [
        "spec.yaml:8: error [P10] args.sglang.rollout-num-gpus-per-engine: a rollout engine's weights do not fit"
        " its static memory on h200: 176.6 GB (94.83 B parameters a GPU x 2 B at least) against"
        " mem_fraction_static 0.7 (--sglang-mem-fraction-static) x 141.0 GB = 98.7 GB\n"
        '  ==> SGLang stops at start ("Not enough memory"): no single change fits;'
        " --sglang-mem-fraction-static 0.9 comes closest (49.7 GB over)",
        "spec.yaml:7: error [P10] args.perf.tensor-model-parallel-size: training cannot fit a GPU of h200:"
        " at least 1589.9 GB (actor optimizer state 1048.1, actor gradients 361.2, actor weights 180.6)"
        " against 141.0 GB\n"
        "  ==> no single change fits; --optimizer-cpu-offload comes closest (400.8 GB over)",
    ]


def test_qwen3_8b_without_recompute_is_estimated_over_an_h100(write):
    # 8.19 B a GPU x 2 + 4 + 12 / DP 8 = 57.2 GB of state; Megatron's activations without sequence
    # parallel: 8192 tokens x 4096 x (10 + 24 / TP 1) x 36 layers, + the logits, x 1.05 = 42.7 GB
    assert memory_problems(write, "qwen3-8B", "h100", QWEN3_8B) == [
        "spec.yaml:7: warning [P11] args.perf.tensor-model-parallel-size: training is estimated over a GPU of"
        " h100 by 27.9 GB: 107.9 GB (actor activations 42.7, actor gradients 30.5, actor weights 15.3,"
        " actor optimizer state 11.4) against 80.0 GB\n"
        "  ==> an estimate, not a certainty: `run-matrix explain CELL --memory` shows each term and its source;"
        " the cheapest change that fits: --recompute-granularity full --recompute-method uniform"
        " --recompute-num-layers 1"
    ]
    recomputed = QWEN3_8B.replace("max-tokens-per-gpu: 8192", "max-tokens-per-gpu: 8192, recompute-granularity: full")
    assert memory_problems(write, "qwen3-8B", "h100", recomputed) == []


def test_an_actor_kept_through_the_rollout_is_counted_there(write):
    kept = QWEN3_8B.replace("recompute", "").replace("colocate: true", "colocate: true, no-offload-train: true")
    kept = kept.replace("max-tokens-per-gpu: 8192", "max-tokens-per-gpu: 8192, recompute-granularity: full")
    found = memory_problems(write, "qwen3-8B", "h100", kept)
    assert found == [
        "spec.yaml:7: warning [P11] args.perf.tensor-model-parallel-size: rollout is estimated over a GPU of"
        " h100 by 46.1 GB: 126.1 GB (engine KV cache pool 50.6, actor gradients 30.5, engine weights 15.3,"
        " actor weights 15.3) against 80.0 GB\n"
        "  ==> an estimate, not a certainty: `run-matrix explain CELL --memory` shows each term and its source;"
        " no single change fits; --sglang-mem-fraction-static 0.5 comes closest (19.2 GB over)"
    ]


def test_a_small_kv_pool_cannot_hold_a_group(write):
    # 0.3 x 80 GB - 15.3 GB of weights - 1 GB = 7.7 GB; a token: 8 KV heads x 128 x 36 layers x 2 x 2 B
    small = QWEN3_8B.replace("max-tokens-per-gpu: 8192", "max-tokens-per-gpu: 8192, recompute-granularity: full")
    small += "  sglang: {sglang-mem-fraction-static: 0.3}\n"
    assert memory_problems(write, "qwen3-8B", "h100", small) == [
        "spec.yaml:9: warning [P12] args.sglang.sglang-mem-fraction-static: an engine's KV pool holds 56,386"
        " tokens, less than one group of samples: 131,072 (16 samples x 8,192 tokens (prompt unset: 0 +"
        " response 8192)); 147,456 B a token\n"
        "  ==> also at spec.yaml:8 (args.rollout.rollout-max-response-len)\n"
        "  ==> SGLang retracts and re-queues requests it cannot hold: raise sglang-mem-fraction-static, give an"
        " engine more GPUs, or an fp8 KV cache (sglang-kv-cache-dtype fp8_e4m3)"
    ]
    fp8 = small.replace("0.3}", "0.3, sglang-kv-cache-dtype: fp8_e4m3}")
    assert memory_problems(write, "qwen3-8B", "h100", fp8.replace("n-samples-per-prompt: 16", "n-samples-per-prompt: 8")) == []


def test_a_model_the_flags_do_not_describe_is_not_estimated(write):
    # Nemotron-3's layer pattern is its checkpoint's: no verdict, never a guess
    assert memory_problems(write, "nemotron-3-nano-30b-a3b", "h100", "args:\n  misc: {colocate: true}\n") == []


def test_the_three_rules_share_one_estimate_of_a_cell(write, monkeypatch):
    """P10, P11 and P12 read the same estimate: made once per cell and layout, not once per rule; a
    cell built again (an edited spec) is estimated afresh."""
    from runner.check import memory

    made: list[str] = []

    def counted(cell, facts, changed=None):
        made.append(cell.id)
        return estimate(cell, facts, changed)

    estimate = memory.estimate
    monkeypatch.setattr(memory, "estimate", counted)
    spec = MINIMAL.replace("glm5-744B-A40B_4layer", "qwen3-8B").replace("h200", "h100")
    path = write("spec.yaml", spec + QWEN3_8B)  # P11 (worked out above)
    first = pipeline.cell(path)
    found = [str(p) for p in check.run(first) if p.rule in ("P10", "P11", "P12")]
    assert found and made == ["spec"]
    assert [str(p) for p in check.run(pipeline.cell(path)) if p.rule in ("P10", "P11", "P12")] == found
    assert made == ["spec", "spec"]
