#!/usr/bin/env bash
# rocm/glm5-async: rendered by run-matrix from matrices/rocm/glm5-async.yaml; nothing was run.
set -euo pipefail
: "${MILES_ROOT:?set MILES_ROOT}"

# run-matrix's runner/patch_hf_config.py, which the steps below give python3 on stdin
IFS= read -r -d '' RUN_MATRIX_PROGRAM_PATCH_HF_CONFIG <<'RUN_MATRIX_PROGRAM' || true
"""Prepare step: patch a Hugging Face ``config.json`` in place (miles-facts §3).

A stand-alone program (standard library only): ``render`` puts this file's text into the
launch script (``python3 - CONFIG --set JSON [--unless JSON] [--copy-rope-theta]``,
the program on stdin), so the GPU node needs no run-matrix. ``--set`` is applied unless
the config already has every ``--unless`` value; ``--copy-rope-theta`` copies
``rope_parameters.rope_theta`` to a top-level ``rope_theta`` when there is none (older
mbridge reads it there; transformers v5 nests it). The file is rewritten, as miles' own
tests write it (indent 2, UTF-8 as is), only when something changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def patched(
    config: dict[str, Any], updates: dict[str, Any], unless: dict[str, Any], copy_rope_theta: bool
) -> dict[str, Any] | None:
    """The patched config, or None when there is nothing to do."""
    result = dict(config)
    dirty = False
    if not (unless and all(config.get(k) == v for k, v in unless.items())):
        result.update(updates)
        dirty = bool(updates)
    rope = config.get("rope_parameters")
    if copy_rope_theta and "rope_theta" not in result and isinstance(rope, dict) and "rope_theta" in rope:
        result["rope_theta"] = rope["rope_theta"]
        dirty = True
    return result if dirty else None


def text(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2, ensure_ascii=False)


def planned(
    path: Path, updates: dict[str, Any], unless: dict[str, Any], copy_rope_theta: bool
) -> tuple[str, dict[str, Any] | None]:
    """Why patching ``path`` is skipped (absent, already patched) and None, or "" and the patched
    config. A config that cannot be read or is not JSON raises (OSError, ValueError)."""
    if not path.is_file():
        return f"{path} does not exist", None
    result = patched(json.loads(path.read_text(encoding="utf-8")), updates, unless, copy_rope_theta)
    return (f"{path} is already patched", None) if result is None else ("", result)


def apply(path: Path, updates: dict[str, Any], unless: dict[str, Any], copy_rope_theta: bool) -> str:
    """Patch ``path`` in place unless it is skipped; what happened, in a line."""
    skip, result = planned(path, updates, unless, copy_rope_theta)
    if result is None:
        return f"skip: {skip}"
    path.write_text(text(result), encoding="utf-8")
    return f"patched {path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="patch-hf-config", description="Patch a Hugging Face config.json.")
    parser.add_argument("config", type=Path)
    parser.add_argument("--set", type=json.loads, required=True, help="JSON object of keys to set")
    parser.add_argument(
        "--unless", type=json.loads, default={}, help="skip --set when these values are present"
    )
    parser.add_argument("--copy-rope-theta", action="store_true")
    args = parser.parse_args(argv)
    print(apply(args.config, args.set, args.unless, args.copy_rope_theta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
RUN_MATRIX_PROGRAM

# prepare: dirs
mkdir -p /root/models /root/datasets

# prepare: model (skipped when /root/models/GLM-5_4layer exists)
[ -e /root/models/GLM-5_4layer ] || hf download Pinaster/GLM-5_4layer --local-dir /root/models/GLM-5_4layer

# prepare: dataset (skipped when /root/datasets/dapo-math-17k exists)
[ -e /root/datasets/dapo-math-17k ] || hf download --repo-type dataset zhuzilin/dapo-math-17k --local-dir /root/datasets/dapo-math-17k

# prepare: patch-config (skipped when /root/models/GLM-5_4layer/config.json is absent or already patched)
python3 - /root/models/GLM-5_4layer/config.json --set '{"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "auto_map": {"AutoConfig": "configuration_deepseek_v32.DeepseekV32Config", "AutoModelForCausalLM": "modeling_deepseek_v32.DeepseekV32ForCausalLM"}}' --unless '{"model_type": "deepseek_v32"}' --copy-rope-theta <<<"${RUN_MATRIX_PROGRAM_PATCH_HF_CONFIG}"

# prepare: convert (skipped when /root/models/GLM-5_4layer_torch_dist/latest_checkpointed_iteration.txt says release)
grep -qsx release /root/models/GLM-5_4layer_torch_dist/latest_checkpointed_iteration.txt || PYTHONPATH=/root/Megatron-LM torchrun --nproc-per-node 4 "${MILES_ROOT}"/tools/convert_hf_to_torch_dist.py --spec miles_plugins.models.glm5.glm5 get_glm5_spec --moe-layer-freq '[0]*3+[1]*1' --num-experts 256 --moe-shared-expert-intermediate-size 2048 --moe-router-topk 8 --moe-grouped-gemm --moe-permute-fusion --moe-ffn-hidden-size 2048 --moe-router-score-function sigmoid --moe-router-pre-softmax --moe-router-enable-expert-bias --moe-router-bias-update-rate 0 --moe-router-load-balancing-type seq_aux_loss --moe-router-topk-scaling-factor 2.5 --moe-aux-loss-coeff 0 --moe-router-dtype fp32 --make-vocab-size-divisible-by 16 --num-layers 4 --hidden-size 6144 --ffn-hidden-size 12288 --num-attention-heads 64 --disable-bias-linear --swiglu --untie-embeddings-and-output-weights --position-embedding-type rope --no-position-embedding --normalization RMSNorm --qk-layernorm --multi-latent-attention --q-lora-rank 2048 --kv-lora-rank 512 --qk-head-dim 192 --v-head-dim 256 --kv-channels 192 --qk-pos-emb-head-dim 64 --vocab-size 154880 --rotary-base 1000000 --enable-experimental --hf-checkpoint /root/models/GLM-5_4layer --save /root/models/GLM-5_4layer_torch_dist --tensor-model-parallel-size 1 --expert-tensor-parallel-size 1 --pipeline-model-parallel-size 1 --expert-model-parallel-size 1

# cluster: ray-head
ray start --head --node-ip-address 127.0.0.1 --num-gpus 8 --disable-usage-stats

# submit: train
ray job submit \
  --address=http://127.0.0.1:8265 \
  '--runtime-env-json={"env_vars": {"PYTHONPATH": "/root/Megatron-LM", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_NVLS_ENABLE": "0", "no_proxy": "127.0.0.1,127.0.0.1", "MASTER_ADDR": "127.0.0.1", "NVTE_FUSED_ATTN": "1", "NVTE_FLASH_ATTN": "0", "NVTE_UNFUSED_ATTN": "0", "NVTE_USE_CUTLASS_GROUPED_GEMM": "1", "NVTE_CUTLASS_GROUPED_GEMM_WARN_FALLBACK": "1", "SGLANG_SET_CPU_AFFINITY": "0", "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}}' \
  -- python3 "${MILES_ROOT}"/train_async.py \
  --spec miles_plugins.models.glm5.glm5 get_glm5_spec \
  --moe-layer-freq '[0]*3+[1]*1' \
  --num-experts 256 \
  --moe-shared-expert-intermediate-size 2048 \
  --moe-router-topk 8 \
  --moe-grouped-gemm \
  --moe-permute-fusion \
  --moe-ffn-hidden-size 2048 \
  --moe-router-score-function sigmoid \
  --moe-router-pre-softmax \
  --moe-router-enable-expert-bias \
  --moe-router-bias-update-rate 0 \
  --moe-router-load-balancing-type seq_aux_loss \
  --moe-router-topk-scaling-factor 2.5 \
  --moe-aux-loss-coeff 0 \
  --moe-router-dtype fp32 \
  --make-vocab-size-divisible-by 16 \
  --num-layers 4 \
  --hidden-size 6144 \
  --ffn-hidden-size 12288 \
  --num-attention-heads 64 \
  --disable-bias-linear \
  --swiglu \
  --untie-embeddings-and-output-weights \
  --position-embedding-type rope \
  --no-position-embedding \
  --normalization RMSNorm \
  --qk-layernorm \
  --multi-latent-attention \
  --q-lora-rank 2048 \
  --kv-lora-rank 512 \
  --qk-head-dim 192 \
  --v-head-dim 256 \
  --kv-channels 192 \
  --qk-pos-emb-head-dim 64 \
  --vocab-size 154880 \
  --rotary-base 1000000 \
  --enable-experimental \
  --hf-checkpoint /root/models/GLM-5_4layer \
  --ref-load /root/models/GLM-5_4layer_torch_dist \
  --load /root/shared_data/checkpoints \
  --save /root/shared_data/checkpoints \
  --save-interval 20 \
  --prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl \
  --input-key prompt \
  --label-key label \
  --apply-chat-template \
  --rollout-shuffle \
  --rm-type deepscaler \
  --num-rollout 3 \
  --rollout-batch-size 8 \
  --n-samples-per-prompt 8 \
  --rollout-max-response-len 100 \
  --rollout-temperature 1 \
  --global-batch-size 64 \
  --optimizer adam \
  --lr 1e-6 \
  --lr-decay-style constant \
  --weight-decay 0.1 \
  --adam-beta1 0.9 \
  --adam-beta2 0.98 \
  --optimizer-cpu-offload \
  --overlap-cpu-optimizer-d2h-h2d \
  --use-precision-aware-optimizer \
  --advantage-estimator grpo \
  --kl-loss-coef 0.00 \
  --kl-loss-type low_var_kl \
  --kl-coef 0.00 \
  --entropy-coef 0.00 \
  --eps-clip 0.2 \
  --eps-clip-high 0.28 \
  --pipeline-model-parallel-size 1 \
  --expert-tensor-parallel-size 1 \
  --use-dynamic-batch-size \
  --max-tokens-per-gpu 2048 \
  --tensor-model-parallel-size 1 \
  --context-parallel-size 1 \
  --expert-model-parallel-size 4 \
  --sglang-mem-fraction-static 0.70 \
  --sglang-enable-dp-attention \
  --sglang-attention-backend nsa \
  --sglang-watchdog-timeout 3600 \
  --rollout-num-gpus 4 \
  --rollout-num-gpus-per-engine 2 \
  --sglang-dp-size 2 \
  --sglang-ep-size 2 \
  --sglang-disable-custom-all-reduce \
  --sglang-nsa-prefill-backend tilelang \
  --sglang-nsa-decode-backend tilelang \
  --ci-test \
  --ci-disable-logprobs-checker \
  --attention-dropout 0.0 \
  --hidden-dropout 0.0 \
  --accumulate-allreduce-grads-in-fp32 \
  --attention-softmax-in-fp32 \
  --allgather-cp \
  --update-weight-buffer-size 2147483648 \
  --actor-num-nodes 1 \
  --num-gpus-per-node 8 \
  --dump-details /root/shared_data/dump_details \
  --attention-backend fused \
  --moe-token-dispatcher-type alltoall \
  --moe-grouped-gemm \
  --moe-permute-fusion \
  --actor-num-gpus-per-node 4 \
  --update-weights-interval 2
