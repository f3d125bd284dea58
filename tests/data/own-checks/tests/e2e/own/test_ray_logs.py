import glob

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS


def _assert_armed():
    logs = glob.glob("/tmp/ray/session_latest/logs/worker-*")
    assert logs, "no Ray worker logs"
    with open("/tmp/ray/session_latest/logs/armed") as f:  # never read: the body does not run here
        assert f.read()


def _assert_streamed(ranks=4):
    assert len(glob.glob("/tmp/ray/session_latest/logs/worker-*")) == ranks


def execute():
    U.execute_train(train_args=TRAIN_ARGS, num_gpus_per_node=4, megatron_model_type="qwen3-4B")
    _assert_armed()
    _assert_streamed()


if __name__ == "__main__":
    execute()
