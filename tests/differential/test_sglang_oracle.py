"""Verdicts of the real SGLang 0.5.10, asked through tools/oracles/sglang/worker.py:
ServerArgs(**kwargs) (all of __post_init__'s adjustments) then check_server_args(),
on a GLM-5-shaped model, as an engine does before it spawns anything.

These pin what the real system says about the rules S1-S17 of
shared/reference/parallelism-rules.md, so that run-matrix's own validation can be
compared against them; the "not SGLang's to catch" tests pin the gaps run-matrix
must fill from facts. Skipped when the oracle venv is not built
(tools/oracles/sglang/build.sh), unless RUN_MATRIX_ORACLES=required.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from sglang_oracle import PLATFORMS, ROCM_PLATFORMS, SGLangOracle

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]

CUDA_PLATFORMS = tuple(p for p in PLATFORMS if p not in ROCM_PLATFORMS)

# One engine of each upstream GLM-5 test, as miles hands it to SGLang
# (shared/reference/miles-facts.md §2; tp = rollout-num-gpus-per-engine).
NV_ENGINE: dict[str, Any] = {
    "tp_size": 8,
    "mem_fraction_static": 0.70,
    "enable_dp_attention": True,
    "ep_size": 8,
    "dp_size": 8,
    "moe_dense_tp_size": 1,
    "enable_dp_lm_head": True,
    "page_size": 64,
    "nsa_decode_backend": "flashmla_sparse",
    "nsa_prefill_backend": "flashmla_sparse",
    "attention_backend": "nsa",
    "cuda_graph_max_bs": 256,
    "max_running_requests": 512,
    "chunked_prefill_size": 16384,
    "watchdog_timeout": 3600,
}
ROCM_ENGINE: dict[str, Any] = {
    "tp_size": 2,
    "mem_fraction_static": 0.7,
    "enable_dp_attention": True,
    "ep_size": 2,
    "dp_size": 2,
    "disable_custom_all_reduce": True,
    "nsa_decode_backend": "tilelang",
    "nsa_prefill_backend": "tilelang",
    "attention_backend": "nsa",
    "watchdog_timeout": 3600,
}
DP_ATTENTION_2x2: dict[str, Any] = {"tp_size": 2, "dp_size": 2, "ep_size": 2, "enable_dp_attention": True}

DEFAULT_CHUNKED_PREFILL = {"h100": 8192, "h200": 8192, "b200": 16384, "mi300x": 16384, "mi355x": 16384}
DEFAULT_NSA = {  # (prefill, decode, kv cache dtype) SGLang picks for GLM-5
    "h100": ("flashmla_sparse", "fa3", "bfloat16"),
    "h200": ("flashmla_sparse", "fa3", "bfloat16"),
    "b200": ("trtllm", "trtllm", "fp8_e4m3"),
    "mi300x": ("tilelang", "tilelang", "bfloat16"),
    "mi355x": ("tilelang", "tilelang", "bfloat16"),
}


@pytest.fixture(scope="module")
def oracle() -> Iterator[SGLangOracle]:
    reason = SGLangOracle.unavailable_reason()
    if reason is not None:
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    with SGLangOracle() as o:
        yield o


def accepted(oracle: SGLangOracle, platform: str, args: dict[str, Any]) -> dict[str, Any]:
    verdict = oracle.check(platform, args)
    assert verdict["accepted"], f"{platform} rejected {args}: {verdict['error_type']}: {verdict['error']}"
    resolved: dict[str, Any] = verdict["resolved"]
    return resolved


def rejected(oracle: SGLangOracle, platform: str, args: dict[str, Any]) -> tuple[str, str]:
    verdict = oracle.check(platform, args)
    assert not verdict["accepted"], f"{platform} accepted {args}: {verdict['resolved']}"
    assert verdict["resolved"] is None
    return verdict["error_type"], verdict["error"]


# --------------------------------------------------------------------- the PR #1124 engines


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tp2_dp2_ep2_with_dp_attention_fits_two_gpus(oracle: SGLangOracle, platform: str) -> None:
    """S1/S3/S7: DP-attention splits the 2-GPU TP group, EP splits it again; nothing multiplies."""
    resolved = accepted(oracle, platform, DP_ATTENTION_2x2)
    assert (resolved["tp_size"], resolved["dp_size"], resolved["ep_size"], resolved["pp_size"]) == (
        2,
        2,
        2,
        1,
    )
    assert resolved["enable_dp_attention"] is True
    assert resolved["nnodes"] == 1


def test_rocm_glm5_engine_is_accepted_on_mi355x(oracle: SGLangOracle) -> None:
    resolved = accepted(oracle, "mi355x", ROCM_ENGINE)
    assert resolved["page_size"] == 1
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == ("tilelang", "tilelang")
    assert resolved["chunked_prefill_size"] == 16384 // 2
    assert resolved["disable_custom_all_reduce"] is True
    assert resolved["kv_cache_dtype"] == "bfloat16"


@pytest.mark.parametrize("platform", ["h100", "h200"])
def test_nv_glm5_engine_is_accepted_on_hopper(oracle: SGLangOracle, platform: str) -> None:
    resolved = accepted(oracle, platform, NV_ENGINE)
    assert (resolved["tp_size"], resolved["dp_size"], resolved["ep_size"]) == (8, 8, 8)
    assert resolved["enable_dp_lm_head"] is True
    assert resolved["page_size"] == 64
    assert resolved["chunked_prefill_size"] == 16384 // 8
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == ("flashmla_sparse",) * 2


def test_b200_overrides_the_users_nsa_backends(oracle: SGLangOracle) -> None:
    """On SM100 the default KV cache is fp8_e4m3, and then SGLang sets both NSA backends
    to trtllm even when the user asked for flashmla_sparse."""
    resolved = accepted(oracle, "b200", NV_ENGINE)
    assert resolved["kv_cache_dtype"] == "fp8_e4m3"
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == ("trtllm", "trtllm")
    resolved = accepted(oracle, "b200", {**NV_ENGINE, "kv_cache_dtype": "bfloat16"})
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == ("flashmla_sparse",) * 2


# --------------------------------------------------------------------- rejections (E / RT)


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_dp_must_divide_tp_under_dp_attention_is_a_bare_assert(oracle: SGLangOracle, platform: str) -> None:
    """S3 / PR #1124's "TP x DP x EP = 8" reading: tp 2 with dp 4 does not fit."""
    error_type, error = rejected(oracle, platform, {"tp_size": 2, "dp_size": 4, "enable_dp_attention": True})
    assert error_type == "AssertionError"
    assert error.startswith("bare assert in _handle_data_parallelism:")


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_moe_dense_tp_size_2_is_rejected(oracle: SGLangOracle, platform: str) -> None:
    """S10."""
    assert rejected(oracle, platform, {**DP_ATTENTION_2x2, "moe_dense_tp_size": 2}) == (
        "AssertionError",
        "moe_dense_tp_size only support 1 and None currently",
    )
    assert accepted(oracle, platform, {**DP_ATTENTION_2x2, "moe_dense_tp_size": 1})["moe_dense_tp_size"] == 1


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_dp_lm_head_needs_dp_attention(oracle: SGLangOracle, platform: str) -> None:
    """S5, and S4: with dp 1 both switches are silently turned off instead."""
    assert rejected(oracle, platform, {"tp_size": 2, "dp_size": 2, "enable_dp_lm_head": True}) == (
        "AssertionError",
        "Please enable dp attention when setting enable_dp_lm_head.",
    )
    resolved = accepted(
        oracle, platform, {"tp_size": 2, "dp_size": 1, "enable_dp_attention": True, "enable_dp_lm_head": True}
    )
    assert (resolved["enable_dp_attention"], resolved["enable_dp_lm_head"]) == (False, False)


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_tp_must_divide_over_nodes(oracle: SGLangOracle, platform: str) -> None:
    """S2."""
    assert rejected(oracle, platform, {"tp_size": 3, "nnodes": 2}) == (
        "AssertionError",
        "tp_size must be divisible by number of nodes",
    )
    assert accepted(oracle, platform, {"tp_size": 16, "nnodes": 2})["nnodes"] == 2


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_multi_node_dp_needs_dp_attention(oracle: SGLangOracle, platform: str) -> None:
    """S16."""
    assert rejected(oracle, platform, {"tp_size": 2, "dp_size": 2, "nnodes": 2}) == (
        "AssertionError",
        "multi-node data parallel is not supported unless dp attention!",
    )


def test_chunked_prefill_must_divide_by_page_size_after_adjustments(oracle: SGLangOracle) -> None:
    """S6: 8192 // 3 = 2730 is no multiple of CUDA's forced page 64; ROCm's page 1 takes it."""
    args = {"tp_size": 3, "dp_size": 3, "enable_dp_attention": True, "chunked_prefill_size": 8192}
    assert rejected(oracle, "h200", args) == (
        "AssertionError",
        "chunked_prefill_size must be divisible by page_size",
    )
    assert accepted(oracle, "mi355x", args)["chunked_prefill_size"] == 2730


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_dsa_kv_cache_dtype_must_be_bf16_or_fp8_e4m3(oracle: SGLangOracle, platform: str) -> None:
    """S11."""
    assert rejected(oracle, platform, {"kv_cache_dtype": "fp8_e5m2"}) == (
        "AssertionError",
        "DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype",
    )
    assert accepted(oracle, platform, {"kv_cache_dtype": "bf16"})["kv_cache_dtype"] == "bfloat16"


def test_nsa_backend_outside_the_choices_is_an_argparse_error(oracle: SGLangOracle) -> None:
    """S12: miles parses --sglang-* with SGLang's own choices."""
    error_type, error = rejected(oracle, "h200", {"nsa_prefill_backend": "flashmla"})
    assert error_type == "ArgumentChoiceError"
    assert error.startswith("argument --nsa-prefill-backend: invalid choice: 'flashmla' (choose from ")


# --------------------------------------------------------------------- silent adjustments (S)


@pytest.mark.parametrize("page_size", [None, 1, 16, 64])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_dsa_page_size_is_forced_per_vendor(
    oracle: SGLangOracle, platform: str, page_size: int | None
) -> None:
    """S11: 64 on CUDA, 1 on ROCm, whatever the flag says."""
    args = {} if page_size is None else {"page_size": page_size}
    resolved = accepted(oracle, platform, args)
    assert resolved["page_size"] == (1 if platform in ROCM_PLATFORMS else 64)
    assert resolved["attention_backend"] == "nsa"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_nsa_backend_defaults(oracle: SGLangOracle, platform: str) -> None:
    resolved = accepted(oracle, platform, {"tp_size": 2})
    prefill, decode, kv_cache_dtype = DEFAULT_NSA[platform]
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == (prefill, decode)
    assert resolved["kv_cache_dtype"] == kv_cache_dtype


@pytest.mark.parametrize("platform", PLATFORMS)
def test_chunked_prefill_default_is_divided_by_dp_under_dp_attention(
    oracle: SGLangOracle, platform: str
) -> None:
    """S6: the default follows GPU memory; DP-attention divides it by dp."""
    default = DEFAULT_CHUNKED_PREFILL[platform]
    assert accepted(oracle, platform, {"tp_size": 2})["chunked_prefill_size"] == default
    assert accepted(oracle, platform, {"tp_size": 2, "dp_size": 2})["chunked_prefill_size"] == default
    assert accepted(oracle, platform, DP_ATTENTION_2x2)["chunked_prefill_size"] == default // 2
    resolved = accepted(oracle, platform, {"tp_size": 8, "dp_size": 8, "enable_dp_attention": True})
    assert resolved["chunked_prefill_size"] == default // 8


@pytest.mark.parametrize("backend", ["deepep", "mooncake"])
def test_a2a_backends_force_ep_to_tp(oracle: SGLangOracle, backend: str) -> None:
    """S9."""
    resolved = accepted(
        oracle, "h200", {**DP_ATTENTION_2x2, "tp_size": 8, "dp_size": 8, "moe_a2a_backend": backend}
    )
    assert (resolved["tp_size"], resolved["ep_size"], resolved["moe_a2a_backend"]) == (8, 8, backend)


def test_mori_forces_ep_to_tp_and_caps_chunked_prefill_by_env(oracle: SGLangOracle) -> None:
    """S9 with MoRI (ROCm's a2a): ep = tp, and the chunked prefill size must not exceed
    SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK (4096 unless set)."""
    args = {"tp_size": 8, "ep_size": 2, "moe_a2a_backend": "mori"}
    error_type, error = rejected(oracle, "mi355x", args)
    assert (error_type, error[:44]) == ("AssertionError", "SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK")
    env = {"SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "16384"}
    verdict = oracle.check("mi355x", args, env=env)
    assert verdict["accepted"], verdict["error"]
    assert verdict["resolved"]["ep_size"] == 8
    assert not oracle.check("mi355x", args)["accepted"]  # the variable did not outlive its check


@pytest.mark.parametrize("platform", ROCM_PLATFORMS)
def test_custom_all_reduce_is_left_alone_on_rocm(oracle: SGLangOracle, platform: str) -> None:
    """S15: ServerArgs never turns it off; that happens (or not) at run time."""
    assert accepted(oracle, platform, DP_ATTENTION_2x2)["disable_custom_all_reduce"] is False


# --------------------------------------------------------------------- not SGLang's to catch


def test_cuda_nsa_backends_are_not_rejected_on_rocm(oracle: SGLangOracle) -> None:
    """S12 at RT only: ServerArgs keeps flashmla_sparse/fa3 on MI355X. Setting only one
    NSA backend on ROCm even defaults the other to a CUDA kernel (fa3)."""
    resolved = accepted(
        oracle, "mi355x", {"nsa_prefill_backend": "flashmla_sparse", "nsa_decode_backend": "fa3"}
    )
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == ("flashmla_sparse", "fa3")
    resolved = accepted(oracle, "mi355x", {"nsa_prefill_backend": "tilelang"})
    assert (resolved["nsa_prefill_backend"], resolved["nsa_decode_backend"]) == ("tilelang", "fa3")


@pytest.mark.parametrize("platform", ["h200", "mi355x"])
def test_dp_without_dp_attention_is_not_rejected(oracle: SGLangOracle, platform: str) -> None:
    """L5 is miles' rule: SGLang alone runs dp 2 x tp 2 = 4 GPUs (S1)."""
    resolved = accepted(oracle, platform, {"tp_size": 2, "dp_size": 2})
    assert (resolved["dp_size"], resolved["enable_dp_attention"]) == (2, False)


@pytest.mark.parametrize("ep_size", [3, 4])
def test_ep_not_dividing_tp_is_not_rejected(oracle: SGLangOracle, ep_size: int) -> None:
    """S7 fails only when process groups are built."""
    assert accepted(oracle, "h200", {"tp_size": 2, "ep_size": ep_size})["ep_size"] == ep_size


# --------------------------------------------------------------------- the oracle itself


def test_checks_are_independent(oracle: SGLangOracle) -> None:
    """ServerArgs writes os.environ; the worker restores it, so order does not matter."""
    first = oracle.check("b200", NV_ENGINE)
    oracle.check("b200", {**DP_ATTENTION_2x2, "moe_a2a_backend": "deepep"})
    again = oracle.check("b200", NV_ENGINE)
    assert {k: v for k, v in first.items() if k != "id"} == {k: v for k, v in again.items() if k != "id"}


def test_unknown_argument_is_rejected_by_name(oracle: SGLangOracle) -> None:
    assert rejected(oracle, "h200", {"no_such_flag": 1}) == (
        "TypeError",
        "ServerArgs.__init__() got an unexpected keyword argument 'no_such_flag'",
    )


def test_replies_report_sglangs_warnings(oracle: SGLangOracle) -> None:
    verdict = oracle.check("mi355x", {"page_size": 64})
    assert "Setting page size to 1 for DeepSeek DSA on ROCm." in verdict["warnings"]


def test_unknown_platform_is_refused_before_any_worker() -> None:
    with pytest.raises(ValueError, match="unknown platform 'a100'"):
        SGLangOracle(python="/nonexistent/python").check("a100", {})


@pytest.mark.parametrize("flag", ["--sglang-dp-size", "--sglang-data-parallel-size"])
def test_an_engine_as_miles_builds_it_keeps_the_parallel_sizes_under_their_short_names(
    oracle: SGLangOracle, flag: str
) -> None:
    """0.5.10's argparse takes --dp-size's dest from --data-parallel-size; miles stores it as dp_size."""
    verdict = oracle.check_engine(
        "h200",
        {"gpus_per_engine": 2, "gpus_per_node": 8, "flags": [flag, "4", "--sglang-enable-dp-attention"]},
    )
    assert verdict["kwargs"]["dp_size"] == 4
    assert (verdict["accepted"], verdict["error"]) == (False, "bare assert in _handle_data_parallelism:2640")
