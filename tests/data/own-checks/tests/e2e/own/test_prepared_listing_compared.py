"""Cycles downloaded rollout data in a function of its own and decides on the text of the folder it
returned: the stand-in would decide it, so the import is refused at the comparison."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = str(cycled(6))
    steps = 6 if folder.startswith("/tmp/") else 3
    launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt --num-epoch {steps}")
