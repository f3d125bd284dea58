"""Runs code of its own beside the job (a thread the checkout's injector.spawn starts), stops it once
the job has ended, and checks the run with what it counted: spawn() becomes a before_submit hook with
its stop, and the count a $${hook:...} argument of the check."""

from pathlib import Path

from tests.e2e.own._launch import launch
from tests.e2e.own.injector import spawn

DUMPS = Path("/tmp/own-beside")


def run(seed: int = 3) -> None:
    handle = spawn(seed=seed, interval=0.5)
    try:
        launch(f" --dump-details {DUMPS}")
    finally:
        handle.stop(timeout_seconds=5)
    verify(DUMPS, injections=handle.count)


def verify(dump_dir: Path, injections: int) -> None:
    assert injections >= 1, f"nothing ran beside the job that wrote {dump_dir}"


if __name__ == "__main__":
    run()
