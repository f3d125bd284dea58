"""Makes the folder its run's name names in a command of its own: no prepare step can name it."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch

if __name__ == "__main__":
    run_id = U.create_run_id()
    U.exec_command(f"mkdir -p /root/out/{run_id}")
    launch(f" --save /root/out/{run_id}")
