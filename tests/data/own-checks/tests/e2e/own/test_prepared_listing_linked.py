"""Links the download's folder elsewhere and lists the link, as bytes, in a function of its own: the
link is the download's folder, so the function is recorded as a prepare call (which makes the link
on the node, as it does here)."""

import os

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch

LINK = "/tmp/own-rollouts-link"


def steps() -> int:
    os.symlink("/root/datasets/own-rollouts", LINK)
    return len(os.listdir(os.fsencode(LINK)))


if __name__ == "__main__":
    U.exec_command("hf download own/rollouts --local-dir /root/datasets/own-rollouts")
    launch(f" --num-epoch {steps()}")
