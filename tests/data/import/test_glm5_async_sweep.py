"""GLM-5 4-layer, pipelined (train_async.py) on one NVIDIA node: 4 train + 4 rollout GPUs, run
once per weight-update interval.

Written for run-matrix's import tests: async training, two execute_train calls from a loop
(they become an axis named after execute()'s argument), the FP8 rollout switch, a CUDA core
dump configured through ExecuteTrainConfig, and the W&B key handed to the job from the
environment (it must become a reference).
"""

import os

import miles.utils.external_utils.command_utils as U

FP8_ROLLOUT = U.get_bool_env_var("MILES_TEST_USE_FP8_ROLLOUT", "false")
MODEL, MODEL_TYPE = "GLM-5_4layer", "glm5-744B-A40B_4layer"
CHECKPOINT = f"/root/models/{MODEL}"


def prepare():
    U.exec_command("mkdir -p /root/models /root/datasets")
    U.exec_command(f"hf download Pinaster/{MODEL} --local-dir {CHECKPOINT}")
    U.hf_download_dataset("zhuzilin/dapo-math-17k")
    U.convert_checkpoint(
        model_name=MODEL, megatron_model_type=MODEL_TYPE, num_gpus_per_node=4, dir_dst="/root/models"
    )
    if FP8_ROLLOUT:
        U.exec_command(
            f"python {U.repo_base_dir}/tools/convert_hf_to_fp8.py --model-dir {CHECKPOINT} "
            f"--save-dir {CHECKPOINT}_fp8 --strategy block --block-size 128 128"
        )


def execute(update_interval):
    ckpt_args = (
        f"--hf-checkpoint {CHECKPOINT}{'_fp8' if FP8_ROLLOUT else ''} --ref-load {CHECKPOINT}_torch_dist "
    )
    rollout_args = (
        "--prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl --input-key prompt --label-key label "
        "--apply-chat-template --rollout-shuffle --rm-type deepscaler --num-rollout 4 --rollout-batch-size 8 "
        "--n-samples-per-prompt 8 --rollout-max-response-len 100 --rollout-temperature 1 --global-batch-size 64 "
    )
    grpo_args = "--advantage-estimator grpo --kl-loss-coef 0.00 --kl-loss-type low_var_kl --eps-clip 0.2 "
    perf_args = (
        "--tensor-model-parallel-size 1 --expert-model-parallel-size 4 --use-dynamic-batch-size "
        "--max-tokens-per-gpu 2048 "
    )
    sglang_args = (
        "--rollout-num-gpus 4 --rollout-num-gpus-per-engine 4 --sglang-mem-fraction-static 0.7 "
        "--sglang-enable-dp-attention --sglang-dp-size 4 --sglang-ep-size 4 --sglang-page-size 64 "
        "--sglang-attention-backend nsa --sglang-nsa-decode-backend flashmla_sparse "
        "--sglang-nsa-prefill-backend flashmla_sparse "
    )
    misc_args = (
        "--attention-backend flash --moe-token-dispatcher-type alltoall --actor-num-nodes 1 "
        f"--actor-num-gpus-per-node 4 --num-gpus-per-node 8 --update-weights-interval {update_interval} "
    )
    train_args = f"{ckpt_args}{rollout_args}{grpo_args}{perf_args}{sglang_args}{misc_args}"
    U.execute_train(
        train_args=train_args,
        num_gpus_per_node=8,
        megatron_model_type=MODEL_TYPE,
        train_script="train_async.py",
        extra_env_vars={"WANDB_API_KEY": os.environ.get("WANDB_API_KEY", "")},
        config=U.ExecuteTrainConfig(cuda_core_dump=True, extra_env_vars="NCCL_DEBUG=WARN"),
    )


if __name__ == "__main__":
    prepare()
    for interval in (1, 2):
        execute(interval)
