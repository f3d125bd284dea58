"""Verdicts of the real Megatron (megatron-core 0.19.2 + Megatron-LM training
arguments), asked through tools/oracles/megatron/worker.py in miles' order:
parse_args -> validate_args -> initialize_model_parallel -> global batch ->
TransformerConfig (MLA) -> OptimizerConfig.

These pin what the real system says about the rules of
shared/reference/parallelism-rules.md (M1-M15), so that run-matrix's own
validation can be compared against them. Skipped when the oracle venv is not
built (tools/oracles/megatron/build.sh), unless RUN_MATRIX_ORACLES=required.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from megatron_oracle import (
    GLM5_MODEL_ARGS,
    GLM5_NV_ACTOR_ARGS,
    GLM5_NV_WORLD_SIZE,
    GLM5_ROCM_ACTOR_ARGS,
    GLM5_ROCM_WORLD_SIZE,
    STAGES,
    MegatronOracle,
)

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]

PARALLEL_FLAGS = {
    "tp": "--tensor-model-parallel-size",
    "pp": "--pipeline-model-parallel-size",
    "cp": "--context-parallel-size",
    "ep": "--expert-model-parallel-size",
    "etp": "--expert-tensor-parallel-size",
}
VALUED = {
    *PARALLEL_FLAGS.values(),
    "--moe-token-dispatcher-type",
    "--global-batch-size",
    "--micro-batch-size",
    "--seq-length",
    "--optimizer",
    "--attention-backend",
}


@pytest.fixture(scope="module")
def oracle() -> Iterator[MegatronOracle]:
    if not MegatronOracle.available():
        reason = MegatronOracle.unavailable_reason()
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    with MegatronOracle() as o:
        yield o


def actor(
    base: Sequence[str],
    *,
    drop: Sequence[str] = (),
    add: Sequence[str] = (),
    **values: object,
) -> list[str]:
    """GLM-5 MODEL_ARGS + an actor's flags, with flags dropped, values replaced
    (tp=3, moe_token_dispatcher_type="alltoall", ...) and flags appended."""
    argv = list(GLM5_MODEL_ARGS) + list(base)
    for flag in drop:
        i = argv.index(flag)
        del argv[i : i + (2 if flag in VALUED else 1)]
    for key, value in values.items():
        flag = PARALLEL_FLAGS.get(key, "--" + key.replace("_", "-"))
        if flag in argv:
            argv[argv.index(flag) + 1] = str(value)
        else:
            argv += [flag, str(value)]
    return argv + list(add)


def nv(**kw: object) -> list[str]:
    return actor(GLM5_NV_ACTOR_ARGS, **kw)  # type: ignore[arg-type]


def rocm(**kw: object) -> list[str]:
    return actor(GLM5_ROCM_ACTOR_ARGS, **kw)  # type: ignore[arg-type]


def rejected(verdict: dict[str, Any], stage: str, message: str) -> None:
    assert verdict["stage"] in STAGES
    assert (verdict["accepted"], verdict["stage"]) == (False, stage), verdict
    assert message in verdict["error"], verdict


# --- the two upstream tests pass --------------------------------------------


@pytest.mark.parametrize("platform", ["h200", "b200"])
def test_nvidia_glm5_actor_accepted(oracle: MegatronOracle, platform: str) -> None:
    v = oracle.check(platform, GLM5_NV_WORLD_SIZE, nv())
    assert v["accepted"] and v["stage"] is None, v
    assert v["derived"] == {"dp": 1, "tp": 4, "pp": 1, "cp": 2, "ep": 8, "etp": 1, "expert_dp": 1}


@pytest.mark.parametrize("platform", ["mi355x", "mi300x"])
def test_rocm_glm5_actor_accepted(oracle: MegatronOracle, platform: str) -> None:
    v = oracle.check(platform, GLM5_ROCM_WORLD_SIZE, rocm())
    assert v["accepted"] and v["stage"] is None, v
    assert v["derived"] == {"dp": 4, "tp": 1, "pp": 1, "cp": 1, "ep": 4, "etp": 1, "expert_dp": 1}


def test_worker_presents_platform(oracle: MegatronOracle) -> None:
    info = oracle.worker_info("mi355x")
    assert info["compute_capability"] == [9, 5] and info["rocm"] is True
    assert info["megatron_core"] == "0.19.2"
    assert oracle.worker_info("b200")["compute_capability"] == [10, 0]


# --- M1 / M4: world and heads divisibility ------------------------------------


def test_m1_tp3_on_8_rejected_by_world_divisibility(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(tp=3, cp=1))
    rejected(v, "validate_args", "world size (8) is not divisible by total_model_size")


def test_m4_tp3_on_6_rejected_by_heads_in_transformer_config(oracle: MegatronOracle) -> None:
    # world 6 divides TP3 x CP1 and ETP1 x EP2; only the 64 heads do not divide by 3,
    # and that is TransformerConfig's check, not validate_args'.
    v = oracle.check("h200", 6, nv(tp=3, cp=1, ep=2))
    rejected(
        v,
        "transformer_config",
        "num_attention_heads (64) must be a multiple of tensor_model_parallel_size (3)",
    )


# --- M2: the expert grid is checked only in initialize_model_parallel --------


def test_m2_tp2_pp2_ep4_etp2_passes_validate_args_fails_initialize(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(tp=2, pp=2, cp=1, ep=4, etp=2))
    rejected(
        v,
        "initialize_model_parallel",
        "world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)",
    )
    assert v["derived"]["dp"] == 2 and v["derived"]["expert_dp"] is None


# --- M3: experts % EP -----------------------------------------------------------


def test_m3_ep3_rejected(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(ep=3))
    rejected(v, "validate_args", "Number of experts should be a multiple of expert model parallel_size")


# --- M5: GQA query groups vs TP (TransformerConfig) -------------------------


def test_m5_query_groups_must_divide_or_be_divided_by_tp(oracle: MegatronOracle) -> None:
    gqa = ["--group-query-attention", "--num-query-groups"]
    bad = nv(cp=1, drop=["--multi-latent-attention"], add=[*gqa, "3"])
    rejected(
        oracle.check("h200", 8, bad),
        "transformer_config",
        "num_query_groups (3) must be a multiple or divisor of tensor_model_parallel_size (4)",
    )
    good = nv(cp=1, drop=["--multi-latent-attention"], add=[*gqa, "2"])
    assert oracle.check("h200", 8, good)["accepted"]


# --- M6: CP needs seq_length % (2 x CP) ------------------------------------------


def test_m6_cp2_needs_seq_length_multiple_of_4(oracle: MegatronOracle) -> None:
    rejected(
        oracle.check("h200", 8, nv(seq_length=4098)),
        "validate_args",
        "seq-length should be a multiple of 2 * context-parallel-size",
    )
    assert oracle.check("h200", 8, nv(seq_length=4100))["accepted"]


# --- M7: sequence parallel adjustments are warnings --------------------------


def test_m7_tp1_turns_sequence_parallel_off_with_a_warning(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(tp=1, cp=1))
    assert v["accepted"], v
    assert any("Disabling sequence parallelism" in w for w in v["warnings"]), v["warnings"]


def test_m7_ep_and_tp_without_sequence_parallel_only_warns(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(cp=1, ep=4, drop=["--sequence-parallel"], tp=2))
    assert v["accepted"], v
    assert any("sequence parallelism must be used" in w for w in v["warnings"]), v["warnings"]


# --- M8: layers % PP ------------------------------------------------------------


def test_m8_num_layers_must_divide_by_pp(oracle: MegatronOracle) -> None:
    rejected(
        oracle.check("h200", 6, rocm(pp=3, ep=2)),
        "validate_args",
        "Number of layers should be divisible by the pipeline-model-parallel size",
    )
    assert oracle.check("h200", 8, rocm(pp=2))["accepted"]


# --- M9: CPU offload -> precision-aware optimizer -> adam -------------------------


def test_m9_cpu_offload_without_precision_aware_optimizer_rejected(oracle: MegatronOracle) -> None:
    v = oracle.check("mi355x", 4, rocm(drop=["--use-precision-aware-optimizer"]))
    rejected(
        v,
        "validate_args",
        "The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer`",
    )


def test_m9_precision_aware_optimizer_needs_adam(oracle: MegatronOracle) -> None:
    v = oracle.check("mi355x", 4, rocm(optimizer="sgd"))
    rejected(v, "optimizer_config", "--use-precision-aware-optimizer only supported with adam")


# --- M10 / M11: DeepEP needs the flex dispatcher (TransformerConfig) -------------


def test_m10_deepep_with_alltoall_rejected(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(moe_token_dispatcher_type="alltoall"))
    rejected(v, "transformer_config", "DeepEP backend is only supported with flex token dispatcher.")


def test_m11_flex_deepep_with_etp_ep_1_is_not_caught_before_runtime(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 1, nv(tp=1, cp=1, ep=1))
    assert v["accepted"], v


# --- M12 / M13: choices are argparse's ----------------------------------------------


def test_m12_unknown_dispatcher_rejected_at_parse(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(moe_token_dispatcher_type="bogus"))
    rejected(v, "parse", "invalid choice: 'bogus'")


def test_m12_allgather_dispatcher_is_rewritten_to_alltoall(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(moe_token_dispatcher_type="allgather", drop=["--moe-enable-deepep"]))
    assert v["accepted"], v


def test_m13_unknown_attention_backend_rejected_at_parse(oracle: MegatronOracle) -> None:
    v = oracle.check("h200", 8, nv(attention_backend="bogus"))
    assert (v["accepted"], v["stage"]) == (False, "parse"), v


# --- M14: global batch % (micro batch x DP) ---------------------------------------


def test_m14_global_batch_rejected_in_validate_args(oracle: MegatronOracle) -> None:
    # validate_args defaults the eval global batch to the global batch and checks it first
    rejected(
        oracle.check("mi355x", 4, rocm(global_batch_size=63)),
        "validate_args",
        "eval_global_batch_size (63) must be divisible by eval_micro_batch_size (1) * data_parallel_size (4)",
    )
    rejected(
        oracle.check("mi355x", 4, rocm(micro_batch_size=3)),
        "validate_args",
        "eval_global_batch_size (64) must be divisible by eval_micro_batch_size (3) * data_parallel_size (4)",
    )
    assert oracle.check("mi355x", 4, rocm(micro_batch_size=2))["accepted"]


def test_m14_batch_stage_when_eval_batch_differs(oracle: MegatronOracle) -> None:
    v = oracle.check("mi355x", 4, rocm(global_batch_size=63, eval_global_batch_size=64))
    rejected(
        v,
        "batch",
        "global batch size (63) is not divisible by micro batch size (1) times data parallel size (4)",
    )


# --- M15: CUDA_DEVICE_MAX_CONNECTIONS below Blackwell ------------------------------


@pytest.mark.parametrize(("platform", "accepted"), [("h200", False), ("mi355x", False), ("b200", True)])
def test_m15_tp_needs_cuda_device_max_connections_below_blackwell(
    oracle: MegatronOracle, platform: str, accepted: bool
) -> None:
    v = oracle.check(platform, 8, nv(), env={"CUDA_DEVICE_MAX_CONNECTIONS": None})
    assert v["accepted"] is accepted, v
    if not accepted:
        rejected(v, "validate_args", "CUDA_DEVICE_MAX_CONNECTIONS to 1")


# --- the protocol ------------------------------------------------------------------


def test_miles_only_flags_are_unknown_to_megatron(oracle: MegatronOracle) -> None:
    rejected(oracle.check("h200", 8, nv(add=["--colocate"])), "parse", "unrecognized arguments: --colocate")


def test_state_is_reset_between_checks(oracle: MegatronOracle) -> None:
    good = nv()
    for _ in range(2):
        assert oracle.check("h200", 8, good)["accepted"]
        assert not oracle.check("h200", 8, nv(tp=2, pp=2, cp=1, ep=4, etp=2))["accepted"]
    v = oracle.check("h200", 16, good)
    assert v["accepted"] and v["derived"]["dp"] == 2 and v["derived"]["expert_dp"] == 2, v
    assert v["elapsed_s"] < 2.0
