"""Counts the rollout data of every download under /root/datasets in a function of its own (a glob
of the folder the download lies in): recorded as a prepare call, and the count reaches the flag."""

import glob

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def steps() -> int:
    return len(glob.glob("/root/datasets/*/*.pt"))


if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    launch(f" --num-epoch {steps()}")
