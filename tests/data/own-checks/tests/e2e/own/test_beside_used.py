"""Runs code of its own beside the job and uses what it counted in code of its own, not only as a
check's argument: a spec cannot hold that."""

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter

if __name__ == "__main__":
    handle = spawn_counter("/tmp/own-beside.count")
    launch()
    handle.stop_and_join(timeout_seconds=5)
    if handle.ticks < 1:
        raise SystemExit("nothing ran beside the job")
