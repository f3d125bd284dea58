"""Prepares a venv under its home and launches with a flag under it: the spec says $${HOME} where the
test used its home, not the import sandbox's private one."""

import os
from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def prepare(venv: str) -> None:
    U.exec_command(f"uv venv --clear {venv}")


if __name__ == "__main__":
    prepare(str(Path.home() / "own-env"))
    launch(f" --save {os.environ['HOME']}/ckpt --dump-details {os.path.expanduser('~')}")
