"""Cycles downloaded rollout data in a function of its own and asks whether the folder it returned is
a link: the call did not run here, so the import is refused at the look-up."""

import os

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    if not os.path.islink(folder):
        launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt")
