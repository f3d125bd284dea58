"""Two launches of one model, a baseline and a target, each saving its metrics to its own folder."""

import miles.utils.external_utils.command_utils as U

DUMPS = "/tmp/checked-dumps"


def run_training(side: str, tp_size: int) -> None:
    train_args = (
        "--hf-checkpoint /root/models/Qwen3-4B --prompt-data /root/datasets/p.jsonl --num-rollout 2 "
        "--rollout-batch-size 8 --n-samples-per-prompt 8 --global-batch-size 64 "
        f"--tensor-model-parallel-size {tp_size} --rollout-num-gpus-per-engine 2 "
        f"--actor-num-nodes 1 --actor-num-gpus-per-node 4 --colocate --dump-details {DUMPS}/{side}"
    )
    U.execute_train(train_args=train_args, num_gpus_per_node=4, megatron_model_type="qwen3-4B")
