"""Joins Ray workers over ssh with a helper the recorder does not stand in for."""

import _glm5
import miles.utils.external_utils.command_utils as U

if __name__ == "__main__":
    U.ssh_start_ray_workers("10.0.0.1", 8)
    _glm5.launch()
