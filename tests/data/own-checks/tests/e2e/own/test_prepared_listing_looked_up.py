"""Cycles downloaded rollout data in a function of its own, then looks for the folder it returned:
recorded as a prepare call, it made no folder here, and the test's own test of it is refused."""

import os

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    if os.path.isdir(folder):
        launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt --debug-train-only")
