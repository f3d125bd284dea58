"""Cycles downloaded rollout data in a function of its own and launches with the parent of the folder
it returned: the stand-in's parent is /, the node's folder's is not, so the import is refused."""

from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch
from tests.e2e.own.rollouts import cycled

if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    folder = cycled(6)
    launch(f" --dump-details {Path(folder).parent / 'own-dumps'}")
