"""Runs what no prepare step runs in the function that also launches: no call can stand for it (the
launch would go with it), so the command is refused as before."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def execute() -> None:
    U.exec_command("uv tool install tiny==1.0")
    launch()


if __name__ == "__main__":
    execute()
