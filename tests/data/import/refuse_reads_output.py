"""Decides on the output of a command."""

import _glm5
import miles.utils.external_utils.command_utils as U

if __name__ == "__main__":
    if "H200" in U.exec_command("nvidia-smi -L", capture_output=True):
        _glm5.launch()
