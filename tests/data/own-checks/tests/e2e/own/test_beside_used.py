"""Runs code of its own beside the job and uses what it counted in code of its own, not only as a
check's argument: a spec cannot hold that."""

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn

if __name__ == "__main__":
    handle = spawn(seed=1, interval=0.5)
    launch()
    handle.stop(timeout_seconds=5)
    if handle.count < 1:
        raise SystemExit("nothing ran beside the job")
