"""Selection by change at scale: 10,000 cells, 1,000 changed files, timed.

The cells are the shipped matrices' own, repeated (each repeat a cell object of its own, its spec
path made distinct), and the changes a mix: spec files of some repeats, hardware profiles, checkout
files (model presets, test scripts, files no cell reads). ``select`` is timed whole: each cell's
inputs, the index of changed files, the core list.

    python tools/bench_changed.py [--cells 10000] [--changed 1000] [--miles-root DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from runner import pipeline
from runner.changed import Changes, select
from runner.knowledge.checkout import Tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=1_000)
    parser.add_argument("--miles-root", type=Path)
    args = parser.parse_args()
    shipped = pipeline.select(["matrices"])
    cells = [
        dataclasses.replace(shipped[n % len(shipped)], id=f"{shipped[n % len(shipped)].id}#{n}")
        for n in range(args.cells)
    ]
    own = {str(Path(f"/nowhere/spec-{n}.yaml")) for n in range(args.changed // 2)}
    own |= {str(p.resolve()) for p in Path("matrices/hardware").glob("h1*.yaml")}
    theirs = {f"tests/e2e/unread_{n}.py" for n in range(args.changed - len(own) - 1)}
    theirs.add("scripts/models/qwen3-30B-A3B.py")
    tree = Tree.at(args.miles_root) if args.miles_root else None
    start = time.perf_counter()
    chosen = select(cells, Changes(frozenset(own), frozenset(theirs)), tree)
    took = time.perf_counter() - start
    print(
        f"{len(cells)} cells, {len(own) + len(theirs)} changed files: {len(chosen)} selected in {took:.3f} s"
    )


if __name__ == "__main__":
    main()
