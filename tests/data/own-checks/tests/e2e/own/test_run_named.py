"""Names its run by the clock, as miles' launchers do: the checkpoints go to a folder of that name."""

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch

if __name__ == "__main__":
    run_id = U.create_run_id()
    folder = f"/root/out/{run_id}/checkpoints"
    launch(f" --load {folder} --save {folder} --save-interval 1")
