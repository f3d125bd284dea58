"""run-matrix's KV bytes per token (runner/memory/kv.py) against SGLang's own sizing, in the SGLang of each
miles version (0.5.10 for the PR era, 0.5.16 for miles main): the per-token cell and the token pool of
tools/oracles/sglang/kv_worker.py, on the shipped presets' MODEL_ARGS, presented as an H200 and a B200.

Each model's HF config.json is written from its MODEL_ARGS (the field names of miles' Megatron-to-HF
converters) plus what a checkpoint alone says (architectures, GLM-5's indexer); run-matrix reads the same
MODEL_ARGS through ``model.shape``. Without the oracle these skip; RUN_MATRIX_ORACLES=required fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.cells import hardware
from runner.errors import Location
from runner.knowledge.bundled import load_preset
from runner.memory import kv
from runner.memory.model import Indexer, shape
from tests.differential.oracle_fixtures import start
from tests.differential.sglang_kv_oracle import SGLangKVOracle
from tests.differential.sglang_oracle import MAIN, VENVS

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]

# what only the checkpoint's config.json says: its architecture, and GLM-5's DSA indexer
CHECKPOINT: dict[str, dict[str, Any]] = {
    "qwen3-30B-A3B": {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe"},
    "qwen3-8B": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"},
    "llama3.1-8B-Instruct": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
    "deepseek-v3": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"},
    # Kimi-K2's checkpoint names model_type kimi_k2 with DeepseekV3Config as remote code; the stored
    # class itself is read here, so that no remote code is needed
    "kimi-k2": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"},
    "glm5-744B-A40B": {
        "architectures": ["GlmMoeDsaForCausalLM"],
        "model_type": "glm_moe_dsa",
        "index_topk": 2048,
        "index_head_dim": 128,
        "index_n_heads": 32,
    },
}
GLM5_INDEXER = Indexer(heads=32, head_dim=128, source="GLM-5's config.json (index_n_heads, index_head_dim)")
# Megatron flag -> HF field, as miles' converters name them (mbridge / tools/convert_hf_to_torch_dist.py)
HF_FIELDS = {
    "hidden-size": "hidden_size",
    "num-attention-heads": "num_attention_heads",
    "num-layers": "num_hidden_layers",
    "ffn-hidden-size": "intermediate_size",
    "vocab-size": "vocab_size",
    "kv-channels": "head_dim",
    "norm-epsilon": "rms_norm_eps",
    "rotary-base": "rope_theta",
    "q-lora-rank": "q_lora_rank",
    "kv-lora-rank": "kv_lora_rank",
    "qk-head-dim": "qk_nope_head_dim",
    "qk-pos-emb-head-dim": "qk_rope_head_dim",
    "v-head-dim": "v_head_dim",
    "num-experts": "n_routed_experts",
    "moe-ffn-hidden-size": "moe_intermediate_size",
    "moe-router-topk": "num_experts_per_tok",
}


@dataclass(frozen=True)
class Engine:
    model: str
    tp: int
    dp: int = 1  # > 1: DP-attention, attention TP = tp / dp
    pp: int = 1
    kv_cache_dtype: str = "auto"
    platform: str = "h200"  # a hardware profile of matrices/hardware/ and a platform of the worker

    @property
    def id(self) -> str:
        parts = (
            [self.model, f"tp{self.tp}"] + [f"dp{self.dp}"] * (self.dp > 1) + [f"pp{self.pp}"] * (self.pp > 1)
        )
        parts += [self.kv_cache_dtype] * (self.kv_cache_dtype != "auto")
        return "-".join(parts + [self.platform] * (self.platform != "h200"))


ENGINES = [
    Engine("qwen3-30B-A3B", 1),
    Engine("qwen3-30B-A3B", 4),  # 4 query groups: one KV head per GPU
    Engine("qwen3-30B-A3B", 8),  # more GPUs than KV heads: each replicated
    Engine("qwen3-30B-A3B", 8, dp=4),  # attention TP 2
    Engine("qwen3-30B-A3B", 4, pp=2),
    Engine("qwen3-8B", 2),
    Engine("qwen3-8B", 1, kv_cache_dtype="fp8_e4m3"),
    Engine("qwen3-8B", 1, platform="b200"),
    Engine("qwen3-8B", 1, kv_cache_dtype="fp4_e2m1", platform="b200"),
    Engine("llama3.1-8B-Instruct", 1),
    Engine("llama3.1-8B-Instruct", 2, kv_cache_dtype="fp8_e5m2"),
    Engine("deepseek-v3", 8),
    Engine("deepseek-v3", 8, dp=8),
    Engine("deepseek-v3", 4, pp=2),  # 61 layers: stages of 30 and 31
    Engine("deepseek-v3", 8, kv_cache_dtype="fp8_e4m3"),
    Engine("deepseek-v3", 8, kv_cache_dtype="fp4_e2m1", platform="b200"),
    Engine("kimi-k2", 8),
    Engine("glm5-744B-A40B", 8),
    Engine("glm5-744B-A40B", 8, kv_cache_dtype="fp8_e4m3"),
    Engine("glm5-744B-A40B", 8, dp=8, pp=2),
    Engine("glm5-744B-A40B", 8, platform="b200"),  # DSA's "auto" is fp8 on Blackwell
]
PLATFORMS = sorted({engine.platform for engine in ENGINES})
# the GPU's free memory before the weights load and after (GiB), and SGLang's fraction of it
MEMORY = {"free_gib": 139.5, "after_load_gib": 101.25, "mem_fraction_static": 0.8}
POOLED = {
    "qwen3-30B-A3B-tp4-pp2",
    "deepseek-v3-tp8-fp8_e4m3",
    "glm5-744B-A40B-tp8",
    "glm5-744B-A40B-tp8-b200",
}
# SGLang 0.5.16 refuses fp4_e2m1 when the model runner configures the KV dtype
FP4_REFUSED = "ValueError: --kv-cache-dtype=fp4_e2m1 is deprecated. Use --kv-cache-dtype=fp4_mx_block16."
# What run-matrix does not know yet, each stated whole so that a fix shows here: on SM100 SGLang's
# default attention backend sets page 64 where runner.check.sglang.page_size says 1 without
# --sglang-page-size: trtllm_mha for standard attention (ServerArgs._get_default_attn_backend), trtllm_mla
# for DeepseekV3ForCausalLM (its model-specific defaults), each "only supports" pages of 64 or fewer
PAGE_UNKNOWN = {
    "qwen3-8B-tp1-b200": 64,
    "qwen3-8B-tp1-fp4_e2m1-b200": 64,
    "deepseek-v3-tp8-fp4_e2m1-b200": 64,
}


@dataclass(frozen=True)
class Ours:
    """What run-matrix says of an engine."""

    kv_cache_dtype: str
    page_size: int
    cell: kv.Cell


def ours(engine: Engine, miles_version: str) -> Ours:
    preset = load_preset(engine.model, Location(Path("spec.yaml")), Path("spec.yaml"), miles_version)[0]
    profile = hardware.named(engine.platform, "platform")
    dtype = kv.kv_cache_dtype(engine.kv_cache_dtype, preset.sparse_attention, profile.compute_capability)
    size = kv.kv_dtype_bytes(dtype)
    assert size is not None
    indexer = GLM5_INDEXER if preset.sparse_attention else None
    cell = kv.cell(shape(dict(preset.model_args).get, indexer), engine.tp // engine.dp, engine.pp, size)
    page = profile.supports.dsa_page_size if preset.sparse_attention else 1
    assert page is not None
    return Ours(dtype, page, cell)


def hf_config(model: str, miles_version: str) -> dict[str, Any]:
    """The model's config.json, from its MODEL_ARGS and what only the checkpoint says."""
    args = dict(
        load_preset(model, Location(Path("spec.yaml")), Path("spec.yaml"), miles_version)[0].model_args
    )
    config = {hf: args[flag] for flag, hf in HF_FIELDS.items() if flag in args}
    for real in ("rms_norm_eps", "rope_theta"):  # YAML reads 1e-6 as text
        if real in config:
            config[real] = float(config[real])
    heads = args["num-attention-heads"]
    config["num_key_value_heads"] = (
        args.get("num-query-groups", heads) if args.get("group-query-attention") else heads
    )
    return {**config, **CHECKPOINT[model], "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


def ask(engine: Engine, miles_version: str) -> dict[str, Any]:
    return {
        "id": engine.id,
        "config": hf_config(engine.model, miles_version),
        "tp": engine.tp,
        "dp": engine.dp,
        "pp": engine.pp,
        "kv_cache_dtype": engine.kv_cache_dtype,
        "memory": MEMORY if engine.id in POOLED else None,
    }


Replies = tuple[str, dict[str, dict[str, Any]]]


@pytest.fixture(scope="module", params=sorted(VENVS))
def sglang(request: pytest.FixtureRequest) -> Iterator[Replies]:
    """(miles version, SGLang's reply by engine id): one worker run per version and platform."""
    replies: dict[str, dict[str, Any]] = {}
    for platform in PLATFORMS:
        for oracle in start(SGLangKVOracle, miles_version=request.param, platform=platform):
            asked = [ask(engine, request.param) for engine in ENGINES if engine.platform == platform]
            replies.update((reply["id"], reply) for reply in oracle.ask(asked))
    yield request.param, replies


def sized(engine: Engine, sglang: Replies) -> dict[str, Any] | None:
    """SGLang's reply on an engine it sizes; None where this version refuses it (as expected)."""
    miles_version, replies = sglang
    reply = replies[engine.id]
    if engine.kv_cache_dtype == "fp4_e2m1" and miles_version == MAIN:
        assert reply["error"] == FP4_REFUSED
        return None
    assert reply["error"] is None, reply.get("trace")
    return reply


def test_sglang_settles_each_engine_as_run_matrix_does(sglang: Replies) -> None:
    """Its version, the attention TP, the KV dtype and the page size ServerArgs settled."""
    miles_version = sglang[0]
    expected, answered = {}, {}
    for engine in ENGINES:
        reply, our = sized(engine, sglang), ours(engine, miles_version)
        if reply is not None:
            page = PAGE_UNKNOWN.get(engine.id, our.page_size)
            expected[engine.id] = (
                VENVS[miles_version].sglang,
                engine.tp // engine.dp,
                our.kv_cache_dtype,
                page,
            )
            answered[engine.id] = (
                reply["sglang"],
                reply["attention_tp"],
                reply["kv_cache_dtype"],
                reply["page_size"],
            )
    assert answered == expected


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.id)
def test_bytes_per_token_are_sglangs(sglang: Replies, engine: Engine) -> None:
    """The cell of the stage with the most layers: SGLang's pool is the smallest over its PP ranks."""
    reply = sized(engine, sglang)
    if reply is not None:
        assert ours(engine, sglang[0]).cell.bytes == max(reply["cells"])


@pytest.mark.parametrize("engine", [e for e in ENGINES if e.id in POOLED], ids=lambda e: e.id)
def test_the_token_pool_is_sglangs(sglang: Replies, engine: Engine) -> None:
    reply = sized(engine, sglang)
    assert reply is not None
    our = ours(engine, sglang[0])
    pool = kv.pool_tokens(
        our.cell, MEMORY["free_gib"], MEMORY["after_load_gib"], MEMORY["mem_fraction_static"], our.page_size
    )
    assert (reply["mem_fraction_static"], pool) == (
        MEMORY["mem_fraction_static"],
        min(reply["max_total_num_tokens"]),
    )


def test_the_dsa_pool_stores_more_than_its_cell_counts(sglang: Replies) -> None:
    """kv.py's docstring: GLM-5's fp8 latent with its scales and a bf16 rope key, 656 bytes a layer, where
    the cell (and so the token count) counts 576; bf16 and DeepSeek V3 store what the cell counts."""
    latent = [e for e in ENGINES if e.model in ("glm5-744B-A40B", "deepseek-v3") and e.platform == "h200"]
    stored = {e.id: sglang[1][e.id]["mla_kv_cache_dim"] for e in latent}
    assert stored == {
        "deepseek-v3-tp8": 576, "deepseek-v3-tp8-dp8": 576, "deepseek-v3-tp4-pp2": 576, "deepseek-v3-tp8-fp8_e4m3": 576,
        "glm5-744B-A40B-tp8": 576, "glm5-744B-A40B-tp8-fp8_e4m3": 656, "glm5-744B-A40B-tp8-dp8-pp2": 576,
    }  # fmt: skip
