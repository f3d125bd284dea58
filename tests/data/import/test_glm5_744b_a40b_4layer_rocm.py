"""GLM-5 744B-A40B cut to 4 layers, GRPO on dapo-math-17k, on one AMD node (async, 4 + 4 GPUs).

Written for run-matrix's import tests in the shape of miles' e2e tests, with the values of
miles-facts §2 (ROCm column). Flag groups are built as word lists here, to show the import
finds them whatever way the strings are put together.
"""

import json
import os
from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=1800, suite="stage-c-glm5-8-gpu-rocm", num_gpus=8)

FP8_ROLLOUT = U.get_bool_env_var("MILES_TEST_USE_FP8_ROLLOUT", "false")

MODEL = "GLM-5_4layer"
MODEL_TYPE = "glm5-744B-A40B_4layer"
NUM_GPUS = 8
TRAIN_GPUS = NUM_GPUS // 2
MODEL_DIR = f"/root/models/{MODEL}"


def _patch_config():
    """DeepSeek V3.2 architecture, and a top-level rope_theta for older mbridge (plain Python)."""
    path = Path(MODEL_DIR) / "config.json"
    if not path.exists():
        return
    config = json.loads(path.read_text())
    if config.get("model_type") != "deepseek_v32":
        config["architectures"] = ["DeepseekV32ForCausalLM"]
        config["model_type"] = "deepseek_v32"
    if "rope_theta" not in config and "rope_parameters" in config:
        config["rope_theta"] = config["rope_parameters"]["rope_theta"]
    path.write_text(json.dumps(config, indent=2))


def prepare():
    U.exec_command("mkdir -p /root/models /root/datasets")
    U.exec_command(f"hf download Pinaster/{MODEL} --local-dir {MODEL_DIR}")
    U.hf_download_dataset("zhuzilin/dapo-math-17k")
    _patch_config()
    if FP8_ROLLOUT:
        U.exec_command(
            f"python {U.repo_base_dir}/tools/convert_hf_to_fp8.py --model-dir {MODEL_DIR} "
            f"--save-dir {MODEL_DIR}_fp8 --strategy block --block-size 128 128"
        )
    parallel = ["--tensor-model-parallel-size 1", "--expert-tensor-parallel-size 1"]
    parallel += ["--pipeline-model-parallel-size 1", "--expert-model-parallel-size 1"]
    U.convert_checkpoint(
        model_name=MODEL,
        megatron_model_type=MODEL_TYPE,
        num_gpus_per_node=4,
        extra_args=" ".join(parallel),
        dir_dst="/root/models",
    )


def execute():
    ckpt_args = " ".join(
        [
            f"--hf-checkpoint {MODEL_DIR}_fp8" if FP8_ROLLOUT else f"--hf-checkpoint {MODEL_DIR}",
            f"--ref-load {MODEL_DIR}_torch_dist",
            "--load /root/shared_data/checkpoints",
            "--save /root/shared_data/checkpoints",
            "--save-interval 20",
        ]
    )
    rollout_args = " ".join(
        [
            "--prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl",
            "--input-key prompt",
            "--label-key label",
            "--apply-chat-template",
            "--rollout-shuffle",
            "--rm-type deepscaler",
            "--num-rollout 3",
            "--rollout-batch-size 8",
            "--n-samples-per-prompt 8",
            "--rollout-max-response-len 100",
            "--rollout-temperature 1",
            "--global-batch-size 64",
        ]
    )
    optimizer_args = (
        "--optimizer adam --lr 1e-6 --lr-decay-style constant --weight-decay 0.1 --adam-beta1 0.9 "
        "--adam-beta2 0.98 --optimizer-cpu-offload --overlap-cpu-optimizer-d2h-h2d "
        "--use-precision-aware-optimizer"
    )
    grpo_args = (
        "--advantage-estimator grpo --kl-loss-coef 0.00 --kl-loss-type low_var_kl --kl-coef 0.00 "
        "--entropy-coef 0.00 --eps-clip 0.2 --eps-clip-high 0.28"
    )
    perf_args = (
        "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --context-parallel-size 1 "
        f"--expert-model-parallel-size {TRAIN_GPUS} --expert-tensor-parallel-size 1 "
        "--use-dynamic-batch-size --max-tokens-per-gpu 2048"
    )
    sglang_args = (
        f"--rollout-num-gpus {NUM_GPUS - TRAIN_GPUS} --rollout-num-gpus-per-engine 2 "
        "--sglang-mem-fraction-static 0.7 --sglang-enable-dp-attention --sglang-dp-size 2 --sglang-ep-size 2 "
        "--sglang-disable-custom-all-reduce --sglang-attention-backend nsa "
        "--sglang-nsa-prefill-backend tilelang --sglang-nsa-decode-backend tilelang "
        "--sglang-watchdog-timeout 3600"
    )
    ci_args = "--ci-test --ci-disable-logprobs-checker"
    misc_args = (
        "--attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32 "
        "--attention-softmax-in-fp32 --attention-backend fused --moe-token-dispatcher-type alltoall "
        "--moe-grouped-gemm --moe-permute-fusion --allgather-cp "
        f"--update-weight-buffer-size {2 * 1024**3} --actor-num-nodes 1 --actor-num-gpus-per-node {TRAIN_GPUS} "
        f"--num-gpus-per-node {NUM_GPUS} --update-weights-interval 2 "
        "--dump-details /root/shared_data/dump_details"
    )
    train_args = (
        f"{ckpt_args} {rollout_args} {optimizer_args} {grpo_args} {U.get_default_wandb_args(__file__)} "
        f"{perf_args} {sglang_args} {ci_args} {misc_args}"
    )
    U.execute_train(
        train_args=train_args,
        num_gpus_per_node=NUM_GPUS,
        megatron_model_type=MODEL_TYPE,
        train_script="train_async.py",
        extra_env_vars={
            "NVTE_FUSED_ATTN": "1",
            "NVTE_FLASH_ATTN": "0",
            "NVTE_UNFUSED_ATTN": "0",
            "NVTE_USE_CUTLASS_GROUPED_GEMM": "1",
            "NVTE_CUTLASS_GROUPED_GEMM_WARN_FALLBACK": "1",
            "SGLANG_SET_CPU_AFFINITY": "0",
            "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES": "1",
            "HIP_VISIBLE_DEVICES": ",".join(str(i) for i in range(NUM_GPUS)),
        },
    )


if __name__ == "__main__":
    prepare()
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        os.environ.pop(name, None)
    execute()
