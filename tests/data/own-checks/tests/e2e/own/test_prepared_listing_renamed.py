"""Cycles downloaded rollout data in a function of its own and renames, in text made of the folder
it returned, what the sandbox cannot follow (a method of a longer text): the stand-in's digits reach
the launch changed, and the import is refused at the launch."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    data = f"{cycled(6)}/{{rollout_id}}.pt".replace("-", "_")
    launch(f" --load-debug-rollout-data {data}")
