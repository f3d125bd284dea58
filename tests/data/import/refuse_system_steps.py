"""test_glm5_conversions.py whose preparation also touches the system: a cron folder made under
/etc, and the node's SSH keys removed. Written for run-matrix's import tests: each such step is
refused at its line unless --allow-system-steps.
"""

import miles.utils.external_utils.command_utils as U

MODEL, MODEL_TYPE = "GLM-5_4layer", "glm5-744B-A40B_4layer"
CHECKPOINT = f"/root/models/{MODEL}"
MEGATRON_PATH = "/root/TransformerEngine:/root/Megatron-LM"


def prepare():
    U.exec_command("mkdir -p /root/models /root/datasets")
    U.exec_command("mkdir -p /etc/cron.d/run-matrix-was-here")
    U.exec_command("rm -rf /etc/ssh /root/.ssh")
    U.exec_command(f"hf download Pinaster/{MODEL}-FP8 --local-dir {CHECKPOINT}-FP8")
    U.hf_download_dataset("zhuzilin/dapo-math-17k")
    U.fp8_cast_bf16(f"{CHECKPOINT}-FP8", CHECKPOINT)
    U.exec_command(f"rm -rf {CHECKPOINT}-NVFP4 {CHECKPOINT}_torch_dist")
    U.exec_command(
        f"python tools/convert_hf_to_nvfp4.py --model-dir {CHECKPOINT} --save-dir {CHECKPOINT}-NVFP4 "
        "--num-layers-at-start-in-bf16 1"
    )
    U.exec_command(
        f"python {U.repo_base_dir}/tools/convert_kimi_int4_to_bf16.py --model-dir {CHECKPOINT}-NVFP4 "
        f"--output-dir {CHECKPOINT}-ref "
    )
    U.convert_checkpoint(
        model_name=MODEL,
        megatron_model_type=MODEL_TYPE,
        num_gpus_per_node=4,
        dir_dst="/root/models",
        megatron_path=MEGATRON_PATH,
    )


def execute(update_interval):
    train_args = (
        f"--hf-checkpoint {CHECKPOINT}-NVFP4 --ref-load {CHECKPOINT}_torch_dist "
        "--prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl --input-key prompt --label-key label "
        "--apply-chat-template --rollout-shuffle --rm-type deepscaler --num-rollout 4 --rollout-batch-size 8 "
        "--n-samples-per-prompt 8 --rollout-max-response-len 100 --rollout-temperature 1 --global-batch-size 64 "
        "--advantage-estimator grpo --tensor-model-parallel-size 1 --expert-model-parallel-size 4 "
        "--use-dynamic-batch-size --max-tokens-per-gpu 2048 --rollout-num-gpus 4 "
        "--rollout-num-gpus-per-engine 4 --sglang-mem-fraction-static 0.7 --sglang-enable-dp-attention "
        "--sglang-dp-size 4 --sglang-ep-size 4 --sglang-page-size 64 --attention-backend flash "
        "--moe-token-dispatcher-type alltoall --actor-num-nodes 1 --actor-num-gpus-per-node 4 "
        f"--num-gpus-per-node 8 --update-weights-interval {update_interval} "
    )
    U.execute_train(
        train_args=train_args,
        num_gpus_per_node=8,
        megatron_model_type=MODEL_TYPE,
        train_script="train_async.py",
        megatron_path=MEGATRON_PATH,
    )


if __name__ == "__main__":
    prepare()
    for interval in (1, 2):
        U.exec_command("ray stop --force || true; pkill -9 sglang || true; sleep 10")
        execute(interval)
