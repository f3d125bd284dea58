"""Qwen3-0.6B trained with the FSDP backend: no Megatron model type, so no MODEL_ARGS.

Written for run-matrix's import tests: an FSDP launch (no model type, no
CUDA_DEVICE_MAX_CONNECTIONS), async, with the few-GPU switch on by default.
"""

import miles.utils.external_utils.command_utils as U

FEW_GPU = U.get_bool_env_var("MILES_TEST_FEW_GPU", "1")


def prepare():
    U.exec_command("mkdir -p /root/models /root/datasets")
    U.exec_command("hf download Qwen/Qwen3-0.6B --local-dir /root/models/Qwen3-0.6B")
    U.hf_download_dataset("zhuzilin/gsm8k")


def execute():
    ckpt_args = "--hf-checkpoint /root/models/Qwen3-0.6B "
    rollout_args = (
        "--prompt-data /root/datasets/gsm8k/train.parquet --input-key messages --label-key label "
        "--apply-chat-template --rollout-shuffle --rm-type math --num-rollout 3 --rollout-batch-size 8 "
        "--n-samples-per-prompt 4 --rollout-temperature 0.8 --global-batch-size 32 "
    )
    misc_args = (
        f"--actor-num-nodes 1 --actor-num-gpus-per-node {1 if FEW_GPU else 2} "
        f"--rollout-num-gpus {1 if FEW_GPU else 2} --num-gpus-per-node {2 if FEW_GPU else 4} --train-backend fsdp "
    )
    U.execute_train(
        train_args=f"{ckpt_args}{rollout_args}{misc_args}",
        num_gpus_per_node=2 if FEW_GPU else 4,
        megatron_model_type=None,
        train_script="train_async.py",
    )


if __name__ == "__main__":
    prepare()
    execute()
