"""Starts the counter twice beside one launch: import tells what the test does with each (its stop,
what it reads) by the function's name alone, so the import is refused."""

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter

if __name__ == "__main__":
    first = spawn_counter("/tmp/own-beside-1.count")
    second = spawn_counter("/tmp/own-beside-2.count")
    launch()
    first.stop_and_join(timeout_seconds=1)
    second.stop_and_join(timeout_seconds=2)
