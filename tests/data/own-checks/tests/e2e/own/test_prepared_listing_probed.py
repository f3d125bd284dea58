"""Decides the number of steps on whether the download's folder is there: once `hf download` has run,
it is, so the spec launches with the steps the test would."""

import os

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch

ROLLOUTS = "/root/datasets/own-rollouts"

if __name__ == "__main__":
    U.exec_command(f"hf download own/rollouts --local-dir {ROLLOUTS}")
    steps = 6 if os.path.isdir(ROLLOUTS) else 3
    launch(f" --num-epoch {steps}")
