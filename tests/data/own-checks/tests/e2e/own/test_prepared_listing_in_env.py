"""Cycles downloaded rollout data in a function of its own and gives the folder it returned to the
job's environment: a spec hands what a prepare call returns to a launch's flags only."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    U.execute_train(
        train_args=TRAIN_ARGS,
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
        extra_env_vars={"OWN_ROLLOUTS": f"{folder}"},
    )
