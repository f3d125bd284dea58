"""Cycles downloaded rollout data in a function of its own, then runs a command with the folder it
returned: a spec hands what a prepare call returns to a launch's flags only."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    U.exec_command(f"ls {folder}")
    launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt --debug-train-only")
