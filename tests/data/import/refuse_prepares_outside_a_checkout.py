"""Prepares in a function of its own with what no step runs, imported without --miles-root: a spec
names such a function by its path in the checkout, so there is none to name."""

import _glm5
import miles.utils.external_utils.command_utils as U


def prepare():
    U.exec_command("uv venv --clear /tmp/own-venv")


if __name__ == "__main__":
    prepare()
    _glm5.launch()
