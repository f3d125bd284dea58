"""Downloads debug rollout data, then cycles it over its steps in a function of its own that lists the
download (rollouts.cycled), and launches with the folder that returns: the spec calls it as a prepare
step of kind call and hands what it returns to the launch's flag as a reference to what it returned."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6) or "/root/datasets/own-rollouts"
    launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt --debug-train-only")
