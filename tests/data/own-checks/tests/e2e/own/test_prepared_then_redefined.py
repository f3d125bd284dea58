"""Prepares the node in a function of its own, launches, then defines the function again below its
``__main__`` block: a spec's PATH.py:prepare would call the second one (its module, loaded without the
``__main__`` block, holds it last), not the one the test called, so the import is refused."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch


def prepare(venv: str) -> None:
    U.exec_command(f"uv venv --clear {venv}")


if __name__ == "__main__":
    prepare("/tmp/own-env/venv")
    launch()


def prepare(venv: str) -> None:
    raise SystemExit("not the preparation the test ran")
