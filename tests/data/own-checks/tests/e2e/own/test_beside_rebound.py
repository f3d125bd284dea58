"""Runs code of its own beside the job and checks what it counted with a check of its own, whose name
is bound to another function once the test has run: the spec's check would not be the test's."""

from pathlib import Path

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter


def verify(dump_dir: Path, injections: int) -> None:
    assert injections >= 1, f"nothing ran beside the job that wrote {dump_dir}"


def main() -> None:
    handle = spawn_counter("/tmp/own-beside.count")
    launch()
    handle.stop_and_join(timeout_seconds=5)
    verify(Path("/tmp/own-beside"), injections=handle.ticks)


if __name__ == "__main__":
    main()

verify = print  # noqa: F811
