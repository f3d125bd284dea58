"""Launches and then reads what the run wrote in the same function, which launched by itself: called
again as a check it would launch again, so a spec cannot hold it."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS


def execute() -> None:
    U.execute_train(
        train_args=TRAIN_ARGS + " --dump-details /tmp/own-direct",
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
    )
    with open("/tmp/own-direct/summary.txt") as summary:
        assert summary.read()


if __name__ == "__main__":
    execute()
