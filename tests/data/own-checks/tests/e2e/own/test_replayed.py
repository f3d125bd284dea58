"""Launches twice through a function of its own, then compares what the two runs wrote in the lines
of the launching function that follow (as miles' router test does): the spec's check calls
execute() again once the second cell's job has ended, with _run() doing nothing."""

from tests.e2e.own._launch import launch

DUMPS = "/tmp/own-replay"


def _run(variant: str) -> None:
    launch(f" --dump-details {DUMPS}/{variant}")


def execute(family: str) -> None:
    for variant in ("left", "right"):
        _run(variant)
    with open(f"{DUMPS}/left/summary.txt") as left, open(f"{DUMPS}/right/summary.txt") as right:
        assert left.read() == right.read(), f"{family}: the two runs differ"


if __name__ == "__main__":
    execute("tiny")
