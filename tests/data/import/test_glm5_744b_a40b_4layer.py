"""GLM-5 744B-A40B cut to 4 layers, GRPO on dapo-math-17k, on one NVIDIA node (colocated).

Written for run-matrix's import tests in the shape of miles' e2e tests: flag strings per
group, ``prepare()`` through the command helpers, one ``execute_train`` call. The values are
those of miles-facts §2 (NVIDIA column).
"""

import json
import os
from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=1800, suite="stage-c-glm5-8-gpu", num_gpus=8)

FP8_ROLLOUT = U.get_bool_env_var("MILES_TEST_USE_FP8_ROLLOUT", "false")

ORG, NAME = "Pinaster", "GLM-5_4layer"
MODEL_TYPE = "glm5-744B-A40B_4layer"
GPUS = 8
MODELS, DATASETS = "/root/models", "/root/datasets"


def patch_config():
    """The checkpoint loads as DeepSeek V3.2 (plain Python: the recorder cannot see it)."""
    path = Path(MODELS) / NAME / "config.json"
    if not path.exists():
        return
    config = json.loads(path.read_text())
    if config.get("model_type") == "deepseek_v32":
        return
    config.update(
        architectures=["DeepseekV32ForCausalLM"],
        model_type="deepseek_v32",
        auto_map={
            "AutoConfig": "configuration_deepseek_v32.DeepseekV32Config",
            "AutoModelForCausalLM": "modeling_deepseek_v32.DeepseekV32ForCausalLM",
        },
    )
    path.write_text(json.dumps(config, indent=2))


def prepare():
    U.exec_command(f"mkdir -p {MODELS} {DATASETS}")
    U.exec_command(f"hf download {ORG}/{NAME} --local-dir {MODELS}/{NAME}")
    U.hf_download_dataset("zhuzilin/dapo-math-17k", data_dir=DATASETS)
    patch_config()
    if FP8_ROLLOUT:
        U.exec_command(
            f"python {U.repo_base_dir}/tools/convert_hf_to_fp8.py --model-dir {MODELS}/{NAME} "
            f"--save-dir {MODELS}/{NAME}_fp8 --strategy block --block-size 128 128"
        )
    U.convert_checkpoint(
        model_name=NAME,
        megatron_model_type=MODEL_TYPE,
        num_gpus_per_node=4,
        extra_args="--tensor-model-parallel-size 1 --expert-tensor-parallel-size 1 "
        "--pipeline-model-parallel-size 1 --expert-model-parallel-size 1 ",
        dir_dst=MODELS,
    )


def execute():
    served = f"{NAME}_fp8" if FP8_ROLLOUT else NAME
    ckpt_args = (
        f"--hf-checkpoint {MODELS}/{served} --ref-load {MODELS}/{NAME}_torch_dist "
        "--load /root/shared_data/checkpoints --save /root/shared_data/checkpoints --save-interval 20 "
    )
    rollout_args = (
        f"--prompt-data {DATASETS}/dapo-math-17k/dapo-math-17k.jsonl --input-key prompt --label-key label "
        "--apply-chat-template --rollout-shuffle --rm-type deepscaler --num-rollout 3 "
        "--rollout-batch-size 8 --n-samples-per-prompt 8 --rollout-max-response-len 100 "
        "--rollout-temperature 1 --global-batch-size 64 "
    )
    optimizer_args = (
        "--optimizer adam --lr 1e-6 --lr-decay-style constant --weight-decay 0.1 "
        "--adam-beta1 0.9 --adam-beta2 0.98 "
    )
    grpo_args = (
        "--advantage-estimator grpo --kl-loss-coef 0.00 --kl-loss-type low_var_kl --kl-coef 0.00 "
        "--entropy-coef 0.00 --eps-clip 0.2 --eps-clip-high 0.28 "
    )
    perf_args = (
        "--tensor-model-parallel-size 4 --sequence-parallel --pipeline-model-parallel-size 1 "
        "--context-parallel-size 2 --expert-model-parallel-size 8 --expert-tensor-parallel-size 1 "
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
        "--use-dynamic-batch-size --max-tokens-per-gpu 2048 --data-pad-size-multiplier 4096 "
        "--log-probs-chunk-size 1024 "
    )
    sglang_args = (
        "--rollout-num-gpus-per-engine 8 --sglang-mem-fraction-static 0.70 --sglang-enable-dp-attention "
        "--sglang-ep-size 8 --sglang-dp-size 8 --sglang-moe-dense-tp-size 1 --sglang-enable-dp-lm-head "
    )
    if FP8_ROLLOUT:
        sglang_args += "--sglang-moe-a2a-backend deepep --sglang-deepep-mode auto "
    sglang_args += (
        "--sglang-page-size 64 --sglang-nsa-decode-backend flashmla_sparse "
        "--sglang-nsa-prefill-backend flashmla_sparse --sglang-attention-backend nsa "
        "--sglang-cuda-graph-max-bs 256 --sglang-max-running-requests 512 "
        "--sglang-chunked-prefill-size 16384 --sglang-watchdog-timeout 3600 "
    )
    ci_args = "--ci-test --ci-disable-logprobs-checker "
    misc_args = (
        "--attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32 "
        "--attention-softmax-in-fp32 --attention-backend flash --moe-enable-deepep "
        f"--moe-token-dispatcher-type flex --allgather-cp --update-weight-buffer-size {2 << 30} "
        f"--actor-num-nodes 1 --actor-num-gpus-per-node {GPUS} --num-gpus-per-node {GPUS} --colocate "
        "--dump-details /root/shared_data/dump_details --disable-weights-backuper "
    )
    wandb_args = U.get_default_wandb_args(__file__)
    train_args = " ".join(
        [
            ckpt_args,
            rollout_args,
            optimizer_args,
            grpo_args,
            wandb_args,
            perf_args,
            sglang_args,
            ci_args,
            misc_args,
        ]
    )
    U.execute_train(
        train_args=train_args,
        num_gpus_per_node=GPUS,
        megatron_model_type=MODEL_TYPE,
        extra_env_vars={
            "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "256",
            "SGLANG_NSA_FORCE_MLA": "1",
            "INDEXER_ROPE_NEOX_STYLE": "0",
            "NVSHMEM_DISABLE_NCCL": "1",
        },
    )


if __name__ == "__main__":
    prepare()
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        os.environ.pop(name, None)
    execute()
