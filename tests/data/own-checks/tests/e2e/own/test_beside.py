"""Runs code of its own beside the job (a thread the checkout's injector.spawn_counter starts), stops
it once the job has ended, and checks the run with what it counted: spawn_counter() becomes a
before_submit hook with its stop, and the count a $${hook:...} argument of the check."""

from pathlib import Path

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn_counter

DUMPS = Path("/tmp/own-beside")


def run(seed: int = 3) -> None:
    handle = spawn_counter(f"/tmp/own-beside-{seed}.count", interval_seconds=0.5)
    try:
        launch(f" --dump-details {DUMPS}")
    finally:
        handle.stop_and_join(timeout_seconds=5)
    verify(DUMPS, injections=handle.ticks)


def verify(dump_dir: Path, injections: int) -> None:
    assert injections >= 1, f"nothing ran beside the job that wrote {dump_dir}"


if __name__ == "__main__":
    run()
