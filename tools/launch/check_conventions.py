#!/usr/bin/env python3
"""Compare what a real miles checkout's execute_train adds around a test's flags with the shipped
launch conventions of every version, for both training backends.

  python tools/launch/check_conventions.py MILES_CHECKOUT [MODEL_TYPE]

The checkout's execute_train runs in the sandbox (nothing it would run is run). Prints the
differences per shipped version and backend; exit 1 when no shipped version matches exactly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runner.knowledge import bundled, versions
from runner.knowledge.conventions import Observed, checkout_conventions
from runner.spec import locate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("model_type", nargs="?", default="qwen3-4B", help="a type the checkout has")
    args = parser.parse_args()
    exact = []
    observed = Observed()  # each backend's execute_train observed once, for every shipped version
    for version in versions.shipped(locate.CONVENTIONS.glob("*.yaml")):
        shipped = bundled.conventions(version.commit)
        found = {
            backend: checkout_conventions(args.checkout, shipped, model_type, observed=observed)[1]
            for backend, model_type in (("megatron", args.model_type), ("fsdp", None))
        }
        for backend, differences in found.items():
            print(f"{version.commit[:8]} {backend:8} {len(differences)} difference(s)")
            for line in differences:
                print(f"    {line}")
        if not any(found.values()):
            exact.append(version.commit[:8])
    print(f"shipped conventions the checkout follows exactly: {', '.join(exact) or 'none'}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
