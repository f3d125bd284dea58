"""Starts the Mooncake master itself, not as execute_train's hook."""

import _glm5
import miles.utils.external_utils.command_utils as U

if __name__ == "__main__":
    U.start_mooncake_master()
    _glm5.launch()
