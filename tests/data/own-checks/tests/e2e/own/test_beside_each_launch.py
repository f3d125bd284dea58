"""Launches twice, each launch with code of its own beside it (the counter started again, stopped
after that launch with a stop of its own): each cell's before_submit holds its own hook and stop."""

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter

if __name__ == "__main__":
    for seed in (1, 2):
        handle = spawn_counter(f"/tmp/own-beside-{seed}.count")
        launch(f" --seed {seed}")
        handle.stop_and_join(timeout_seconds=seed)
