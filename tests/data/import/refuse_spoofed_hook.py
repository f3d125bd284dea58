"""Swaps miles' start_mooncake_master for code of its own, then passes it as the hook."""

import _glm5
import miles.utils.external_utils.command_utils as U


def mine():
    print("code of the test's own")


if __name__ == "__main__":
    U.start_mooncake_master = mine
    _glm5.launch(before_ray_job_submit=U.start_mooncake_master)
