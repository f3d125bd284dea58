"""The AMD copy of ../run_tiny.py: triton attention, and RCCL's own tuning."""

import miles.utils.external_utils.command_utils as U

EXTRA = "--sglang-attention-backend triton --sglang-disable-custom-all-reduce "
ENV = {"HSA_NO_SCRATCH_RECLAIM": "1"}


def train(extra: str = "") -> None:
    U.execute_train(
        train_args=(
            "--hf-checkpoint /root/models/Qwen3-4B --prompt-data /root/d.jsonl --num-rollout 2 "
            "--rollout-batch-size 8 --n-samples-per-prompt 8 --global-batch-size 64 "
            "--tensor-model-parallel-size 2 --rollout-num-gpus-per-engine 2 "
            "--actor-num-nodes 1 --actor-num-gpus-per-node 4 --colocate " + EXTRA + extra
        ),
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
        extra_env_vars=dict(ENV),
    )


def broken() -> None:
    U.exec_command_that_miles_does_not_have("true")
