"""Lists the download in a generator of its own: a prepare call takes what the function returns, and
calling a generator function runs none of it, so the import is refused at the call."""

import os

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def rollouts():
    yield from sorted(os.listdir("/root/datasets/own-rollouts"))


if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    first = next(rollouts())
    launch(f" --load-debug-rollout-data /root/datasets/own-rollouts/{first}")
