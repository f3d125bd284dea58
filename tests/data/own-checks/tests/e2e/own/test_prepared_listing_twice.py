"""Cycles downloaded rollout data twice, in one function of its own, and launches with both folders:
a spec's reference names what one call returns, so the import is refused at the second call."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    train = cycled(6)
    dumps = cycled(2)
    launch(f" --load-debug-rollout-data {train}/{{rollout_id}}.pt --dump-details {dumps}")
