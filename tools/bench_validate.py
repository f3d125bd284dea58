#!/usr/bin/env python3
"""How long does validation take? Generates N cells (overlays on the shipped GLM-5 specs, with
varied parallelism), then loads, resolves, models and checks every one, as `validate` does.

    python tools/bench_validate.py [N]     # default 1000; prints cells, seconds, cells/s
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from pathlib import Path

from runner import check, pipeline

MATRICES = pipeline.locate.BUNDLED_MATRICES
BASES = [MATRICES / "nv" / "glm5-colocate.yaml", MATRICES / "rocm" / "glm5-async.yaml"]


def overlays(count: int) -> list[str]:
    grid = itertools.product(BASES, (1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4), (1, 2, 3, 4))
    texts = []
    for base, tp, engine, dp, ep, actor_ep in itertools.islice(itertools.cycle(grid), count):
        texts.append(
            f"extends: {base}\nargs:\n  perf:\n    tensor-model-parallel-size: {tp}\n"
            f"    expert-model-parallel-size: {actor_ep}\n"
            f"  sglang:\n    rollout-num-gpus-per-engine: {engine}\n"
            f"    sglang-dp-size: {dp}\n    sglang-ep-size: {ep}\n"
        )
    return texts


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for index, text in enumerate(overlays(count)):
            path = Path(folder) / f"cell{index}.yaml"
            path.write_text(text)
            paths.append(path)
        started = time.perf_counter()
        errors = sum(any(p.severity == "error" for p in check.run(pipeline.cell(path))) for path in paths)
        elapsed = time.perf_counter() - started
    print(f"{count} cells validated in {elapsed:.2f} s ({count / elapsed:.0f} cells/s); {errors} with errors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
