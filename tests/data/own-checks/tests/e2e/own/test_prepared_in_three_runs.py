"""Takes two seconds to start, then prepares the node in two functions of its own, the first ending the
script (so import learns of the second only once it records the first as a call): recorded in three
runs, which share the time one run has."""

import select

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def make_venv() -> None:
    U.exec_command("uv venv --clear /tmp/own-env/venv")
    raise SystemExit(0)


def clone() -> None:
    U.exec_command("git clone https://example.invalid/env.git /tmp/own-env-src")


if __name__ == "__main__":
    select.select([], [], [], 2)  # time.sleep is the recorder's: it returns at once
    make_venv()
    clone()
    launch()
