"""Runs code of its own beside the job, checks what it counted with a comparison of its own, and then
passes the count to a check: the comparison is no spec's, so the import is refused (a stand-in count
would pass it silently and the spec would lose it)."""

from pathlib import Path

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter


def verify(dump_dir: Path, injections: int) -> None:
    assert injections >= 1, f"nothing ran beside the job that wrote {dump_dir}"


if __name__ == "__main__":
    handle = spawn_counter("/tmp/own-beside.count")
    launch()
    handle.stop_and_join(timeout_seconds=5)
    ticks = handle.ticks
    assert ticks > 3, "too few ticks"
    verify(Path("/tmp/own-beside"), injections=ticks)
