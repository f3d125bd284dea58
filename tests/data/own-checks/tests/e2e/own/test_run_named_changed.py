"""Launches with its run's name changed in code of its own (dashes to underscores)."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch

if __name__ == "__main__":
    launch(f" --save /root/out/{U.create_run_id().replace('-', '_')}")
