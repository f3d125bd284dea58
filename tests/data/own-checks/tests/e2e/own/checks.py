"""A test's own check as the runner tests call it: PATH.py:function on a real Ray cluster."""

import json
from pathlib import Path

from tests.e2e.own._launch import TRAIN_ARGS  # a module of the checkout: the checkout's root is on sys.path


def read_metrics(metrics: Path, at_most: float):
    """Every sample's mismatch rate is at most ``at_most``."""
    rates = [json.loads(line)["mismatch"] for line in metrics.read_text().splitlines()]
    assert TRAIN_ARGS
    assert max(rates) <= at_most, f"mismatch rate {max(rates):.2f} > {at_most}"
    print(f"own check: {len(rates)} samples, at most {max(rates):.2f}")


if __name__ == "__main__":
    raise SystemExit("the __main__ block ran")
