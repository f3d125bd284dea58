"""Prepares in a function of its own that runs what no step runs, then reads a file that preparation
would have left: recorded as a call, it left nothing, and the failure says why."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def install() -> None:
    U.exec_command("uv tool install tiny==1.0 --directory /tmp/own-tools")


if __name__ == "__main__":
    install()
    with open("/tmp/own-tools/version.txt") as version:
        launch(f" --dump-details /tmp/own-tools/{version.read().strip()}")
