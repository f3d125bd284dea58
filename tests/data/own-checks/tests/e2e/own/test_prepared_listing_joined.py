"""Cycles downloaded rollout data in a function of its own and joins names to the folder it returned
(os.path.join, pathlib's /): what the spec launches with is that folder with the names joined."""

import os
from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    steps = os.path.join(folder, "steps")
    dumps = Path(folder) / "dumps"
    launch(f" --load-debug-rollout-data {steps}/{{rollout_id}}.pt --dump-details {dumps}")
