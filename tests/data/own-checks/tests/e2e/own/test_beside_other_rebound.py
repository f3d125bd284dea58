"""Checks what it counted with verify_all() while a function it never calls, verify(), has its name
bound to print once the test has run: the spec's check is verify_all(), held to the end."""

from pathlib import Path

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter


def verify(dump_dir: Path) -> None:
    assert dump_dir.exists()


def verify_all(dump_dir: Path, injections: int) -> None:
    assert injections >= 1, f"nothing ran beside the job that wrote {dump_dir}"


def main() -> None:
    handle = spawn_counter("/tmp/own-beside.count")
    launch()
    handle.stop_and_join(timeout_seconds=5)
    verify_all(Path("/tmp/own-beside"), injections=handle.ticks)


if __name__ == "__main__":
    main()

verify = print  # noqa: F811
