"""Prepares in a function of its own that runs what no step runs, and launches with what it returns
or a default: recorded as a call, it returns nothing known, and the default would be a guess."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def install() -> str:
    U.exec_command("uv tool install tiny==1.0")
    return "/tmp/tools/tiny"


if __name__ == "__main__":
    tool = install() or "/tmp/tools/default"
    launch(f" --dump-details {tool}/dumps")
