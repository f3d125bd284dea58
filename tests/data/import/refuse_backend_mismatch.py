"""Passes no model type but trains with the Megatron backend."""

import miles.utils.external_utils.command_utils as U

if __name__ == "__main__":
    U.execute_train(
        train_args="--hf-checkpoint /root/models/Qwen3-0.6B ", num_gpus_per_node=2, megatron_model_type=None
    )
