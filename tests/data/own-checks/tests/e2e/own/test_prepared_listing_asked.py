"""Cycles downloaded rollout data in a function of its own and compares the folder it returned with a
default, as paths: the stand-in would answer, so the import is refused at the comparison."""

from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

DEFAULT = Path("/root/datasets/own-rollouts")

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = Path(cycled(6))
    extra = " --debug-train-only" if folder != DEFAULT else ""
    launch(f" --load-debug-rollout-data {folder}/{{rollout_id}}.pt{extra}")
