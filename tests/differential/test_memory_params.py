"""run-matrix's parameters per GPU (runner/memory/params.py) against megatron-core 0.19.2's own
sharding: GPTModel built on the meta device for one rank of each pipeline stage
(tools/oracles/megatron/params_worker.py), its parameters counted, routed experts apart.

Where the oracle's model is not the one miles trains, deliberately:
- The local layer spec, not Transformer Engine's (TE needs a GPU). TE fuses the input norm into the
  QKV / fc1 linear (``TELayerNormColumnParallelLinear``: the same weight and bias, counted once);
  the local spec builds them apart. Same count.
- DeepSeek sparse attention (GLM-5, DeepSeek V3.2) as megatron-core's DSA, not miles' plugin
  (miles_plugins/models/glm5/glm5.py builds it on TE's linears). Both build the same indexer: wq_b
  (q latent -> heads x head_dim), wk (hidden -> head_dim), a LayerNorm k_norm and weights_proj
  (hidden -> heads), all replicated; the indexer's heads and head size are the checkpoint's
  (runner/memory/estimate.py's INDEXERS). Only at TP 1: DSA's absorbed MLA needs sequence parallelism
  at TP > 1, which torch's LayerNorm (the local spec's) refuses; the same models without the indexer
  are compared at TP 2 and 4.
- MLA's down projections replicated, as TE's spec builds them (TELinear, "duplicated"); the local
  spec splits them over TP (ColumnParallelLinear). The worker swaps in megatron-core's local Linear.
- Kernel choices that own no parameters are off (MoE's fused permutation, gradient-accumulation
  fusion, the persistent LayerNorm), and the local core attention takes MLA's head sizes it ignores.
- The padded vocabulary: megatron-core's wheel leaves Megatron-LM's tokenizer out, so the worker pads
  by its rule (a multiple of make-vocab-size-divisible-by x TP); the counts do not check that rule.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.memory.model import Indexer, shape
from runner.memory.params import Split, shards
from tests.differential.megatron_oracle import PR_ERA, MegatronOracle, _python_path

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tools" / "oracles" / "megatron" / "params_worker.py"
PRESETS = REPO / "miles" / "models" / "2026-08-21-31f1ca96"
MILES_ONLY = {"spec"}  # MODEL_ARGS that Megatron's parser does not take (miles' layer-spec hook)

# A GPT-2-like model: LayerNorm with biases, linear biases, GELU, learned absolute positions, tied.
LAYERNORM_BIAS = {
    "num-layers": 4,
    "hidden-size": 1024,
    "num-attention-heads": 16,
    "ffn-hidden-size": 4096,
    "vocab-size": 50257,
    "normalization": "LayerNorm",
}


@dataclass(frozen=True)
class Case:
    """A model (a preset's MODEL_ARGS, some changed) on a parallel layout."""

    name: str
    preset: str | None
    tp: int = 1
    pp: int = 1
    ep: int = 1
    etp: int | None = None  # None: TP, Megatron's default
    cp: int = 1
    first: int = 0  # decoder-first-pipeline-num-layers
    last: int = 0
    changes: Mapping[str, Any] = field(default_factory=dict)
    indexer: Indexer | None = None  # DeepSeek sparse attention's, built at TP 1 only (see above)

    def model_args(self) -> dict[str, Any]:
        args = (
            yaml.safe_load((PRESETS / f"{self.preset}.yaml").read_text())["model_args"] if self.preset else {}
        )
        return {**args, **self.changes}

    def split(self) -> Split:
        etp = self.tp if self.etp is None else self.etp
        return Split(self.tp, self.pp, self.ep, etp, self.first, self.last)


FEW_LAYERS = {"num-layers": 4}
MTP = {"mtp-num-layers": 1}
GLM5_INDEXER = Indexer(32, 128, "zai-org/GLM-5 config.json")
DEEPSEEK_V32_INDEXER = Indexer(64, 128, "deepseek-ai/DeepSeek-V3.2 config.json")
CASES = (
    Case("glm5-nv-actor", "glm5-744B-A40B_4layer", tp=4, cp=2, ep=8, etp=1),
    Case("glm5-rocm-actor", "glm5-744B-A40B_4layer", tp=1, ep=4, etp=1),
    Case("glm5-pp2", "glm5-744B-A40B_4layer", tp=2, pp=2, ep=2, etp=1),
    Case("glm5-dsa-rocm-actor", "glm5-744B-A40B_4layer", ep=4, indexer=GLM5_INDEXER),
    Case("glm5-dsa-pp2", "glm5-744B-A40B_4layer", pp=2, ep=8, indexer=GLM5_INDEXER),
    Case(
        "deepseek-v32-dsa-mtp-pp2",
        "deepseek-v32-5layer",
        pp=2,
        ep=2,
        first=3,
        changes=MTP,
        indexer=DEEPSEEK_V32_INDEXER,
    ),
    Case("deepseek-v3-pp2", "deepseek-v3-5layer", tp=2, pp=2, ep=8, etp=1, first=3),
    Case("deepseek-v3-mtp", "deepseek-v3-5layer", tp=8, ep=8, etp=1, changes=MTP),
    Case("deepseek-v3-mtp-pp2", "deepseek-v3-5layer", tp=2, pp=2, ep=2, first=3, changes=MTP),
    Case("qwen3-30b-a3b", "qwen3-30B-A3B-5layer"),
    Case("qwen3-30b-a3b-etp2", "qwen3-30B-A3B-5layer", tp=4, ep=2, etp=2),
    Case("qwen3-30b-a3b-pp2", "qwen3-30B-A3B-5layer", tp=2, pp=2, ep=8, etp=1, last=1),
    Case("qwen3-8b-pp4", "qwen3-8B", tp=8, pp=4, changes=FEW_LAYERS),
    Case("qwen3-8b-cp2", "qwen3-8B", tp=2, cp=2, changes=FEW_LAYERS),
    Case("qwen3-4b-tied", "qwen3-4B", changes=FEW_LAYERS),
    Case("qwen3-4b-tied-pp2", "qwen3-4B", tp=4, pp=2, changes=FEW_LAYERS),
    Case("qwen2.5-qkv-bias", "qwen2.5-0.5B", tp=2, changes=FEW_LAYERS),
    Case("layernorm-bias-pp2", None, tp=2, pp=2, changes=LAYERNORM_BIAS),
)


def megatron_argv(model_args: Mapping[str, Any]) -> list[str]:
    """MODEL_ARGS as Megatron's command line: a true flag bare, a false or unset one left out."""
    argv: list[str] = []
    for name, value in model_args.items():
        if name in MILES_ONLY or value is False or value is None:
            continue
        argv += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return argv


def requests() -> list[dict[str, Any]]:
    found = []
    for case in CASES:
        split = case.split()
        layout = {"tp": case.tp, "pp": case.pp, "ep": case.ep, "etp": split.etp, "cp": case.cp}
        extra = []
        if case.first:
            extra += ["--decoder-first-pipeline-num-layers", str(case.first)]
        if case.last:
            extra += ["--decoder-last-pipeline-num-layers", str(case.last)]
        indexer = {"heads": case.indexer.heads, "head_dim": case.indexer.head_dim} if case.indexer else None
        for stage in range(case.pp):
            found.append(
                {
                    "id": f"{case.name}/stage{stage}",
                    "model_args": megatron_argv(case.model_args()),
                    "stage": stage,
                    "args": extra,
                    "indexer": indexer,
                    **layout,
                }
            )
    return found


@pytest.fixture(scope="module")
def megatron_counts() -> dict[str, dict[str, Any]]:
    """The oracle's reply to every request, by id; skip without the oracle venv (fail under
    RUN_MATRIX_ORACLES=required)."""
    if not MegatronOracle.available(PR_ERA):
        reason = MegatronOracle.unavailable_reason(PR_ERA)
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    done = subprocess.run(
        [str(_python_path(PR_ERA)), str(WORKER)],
        input=json.dumps(requests()),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        cwd=REPO,
    )
    assert done.returncode == 0, f"params_worker.py exited {done.returncode}:\n{done.stderr[-3000:]}"
    return {reply["id"]: reply for reply in json.loads(done.stdout)}


def ours() -> dict[str, tuple[int, float, float]]:
    """run-matrix's (layers, dense, experts) on one GPU of each case's stages."""
    found = {}
    for case in CASES:
        args = case.model_args()
        for shard in shards(shape(args.get, case.indexer), case.split()):
            found[f"{case.name}/stage{shard.stage}"] = (shard.layers, shard.dense, shard.experts)
    return found


def test_covers_the_issue_s_configurations() -> None:
    """At least 12 configurations: GLM-5, DeepSeek-V3 (with MTP), Qwen3-30B-A3B, dense models
    (LayerNorm with biases, tied and untied), TP 1-8, PP 1-4, EP 1-8, ETP other than TP, CP 2."""
    assert len(CASES) >= 12
    presets = {case.preset for case in CASES}
    assert {"glm5-744B-A40B_4layer", "deepseek-v3-5layer", "qwen3-30B-A3B-5layer", "qwen3-8B"} <= presets
    assert any(case.model_args().get("mtp-num-layers") for case in CASES)
    assert any(case.indexer and case.model_args().get("mtp-num-layers") for case in CASES)
    assert any(case.model_args().get("normalization") == "LayerNorm" for case in CASES)
    assert {bool(case.model_args().get("untie-embeddings-and-output-weights")) for case in CASES} == {
        True,
        False,
    }
    assert {1, 2, 4, 8} <= {case.tp for case in CASES}
    assert {1, 2, 4} <= {case.pp for case in CASES}
    assert {1, 2, 8} <= {case.ep for case in CASES}
    assert any(case.split().etp != case.tp for case in CASES)
    assert any(case.cp == 2 for case in CASES)


def test_every_request_is_built(megatron_counts: dict[str, dict[str, Any]]) -> None:
    errors = {rid: reply["error"] for rid, reply in megatron_counts.items() if reply["error"]}
    assert errors == {}
    assert sorted(megatron_counts) == sorted(r["id"] for r in requests())


def test_parameters_per_gpu_equal_megatron_core_s(megatron_counts: dict[str, dict[str, Any]]) -> None:
    """Each stage's layers, dense parameters and routed-expert parameters on one GPU, exactly."""
    theirs = {
        rid: (reply["layers"], reply["dense"], reply["experts"])
        for rid, reply in megatron_counts.items()
        if not reply["error"]
    }
    assert ours() == theirs
