"""runner.memory.rollout and kv: what names a rollout checkpoint's quantization, and the KV dtypes SGLang takes."""

from __future__ import annotations

from runner import pipeline
from runner.memory import kv
from runner.memory.rollout import weight_bytes
from tests.test_model import VALID


def test_a_switch_naming_quant_names_no_checkpoint(write):
    # miles' --check-weight-update-allow-quant-error (the DeepSeek V3.2 fp8 test sets it) is a switch
    spec = VALID + "  rollout: {check-weight-update-allow-quant-error: true}\n"
    cell = pipeline.cell(write("spec.yaml", spec))
    assert weight_bytes(cell) == (2.0, 2.0, "bf16: no flag names a quantized checkpoint")


def test_a_value_naming_a_quantization_of_a_kind_not_said_is_not_estimated(write):
    spec = VALID + "  ckpt: {hf-checkpoint: /root/models/GLM-5-quantized}\n"
    cell = pipeline.cell(write("spec.yaml", spec))
    assert weight_bytes(cell) == (None, 0.5, "a flag names a quantization of a kind not said")


def test_kv_dtypes_sglang_takes_for_bf16():
    # SGLang 0.5.10 and 0.5.16: --kv-cache-dtype choices include both "bf16" and "bfloat16"
    assert [kv.kv_dtype_bytes(d) for d in ("auto", "bf16", "bfloat16", "fp8_e4m3", "mxfp8")] == [
        2.0,
        2.0,
        2.0,
        1.0,
        None,
    ]


def test_lora_adapters_are_estimated_in_place_of_the_base_s_state(write):
    from runner.cells.layout import layout
    from runner.memory.estimate import estimate

    spec = (
        VALID
        + "  perf: {lora-rank: 16, target-modules: all-linear}\n  rollout: {rollout-max-response-len: 1024}\n"
    )
    cell = pipeline.cell(write("spec.yaml", spec))
    found = estimate(cell, layout(cell))
    training = next(p for p in found.phases if p.name == "training")
    actor = [t.name for t in training.terms if t.holder == "actor"]
    assert found.level == "full"
    assert actor == [
        "weights",
        "gradients and optimizer state",
        "activations",
        "CUDA context and NCCL",
        "fragmentation",
    ]
    # GLM-5's 4 layers, 256 experts each adapted whole (EP 1): bf16 + fp32 grads + 12 B / DP 8
    adapted = next(t for t in training.terms if t.name == "gradients and optimizer state")
    assert adapted.inputs == "309.8 M adapter parameters at most (lora-rank 16) x (2 + 4 + 12 / 8) B"
    assert adapted.bytes == 309_803_008 * 7.5
