"""Cycles downloaded rollout data in a function of its own and launches with a slice of the folder it
returned: a spec holds what a prepare call returns whole, so the import is refused at the slice."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    launch(f" --load-debug-rollout-data {str(folder)[:-1]}/{{rollout_id}}.pt")
