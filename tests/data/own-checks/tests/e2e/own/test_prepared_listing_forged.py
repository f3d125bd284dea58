"""Writes, itself, what run-matrix's stand-in for a prepare call's result looks like, for a call
there is not: the import is refused at the launch rather than write it into a spec."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt --dump-details /run-matrix-prepared-2-5089417263")
