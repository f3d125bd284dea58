"""Prepares in a function of its own given a value a spec cannot hold as JSON."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


class Pins:
    versions = ("tiny==1.0",)


def install(pins):
    U.exec_command(f"uv tool install {pins.versions[0]}")


if __name__ == "__main__":
    install(Pins())
    launch()
