"""Installs a package before launching."""

import _glm5
import miles.utils.external_utils.command_utils as U

if __name__ == "__main__":
    U.exec_command("pip install flash-attn")
    _glm5.launch()
