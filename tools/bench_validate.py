#!/usr/bin/env python3
"""How long does validation take? Two figures, as `validate` does the work:

* N separate spec files (overlays on the shipped GLM-5 specs, varied parallelism);
* one spec whose matrix expands into M cells (axes feed the parallelism via ${matrix.*}).

  python tools/bench_validate.py [N] [M]     # defaults: 1000 files, 10000 matrix cells
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
from pathlib import Path

from runner import check, pipeline
from runner.spec import locate

MATRICES = locate.BUNDLED_MATRICES
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


def matrix_spec(cells: int) -> str:
    side = round(cells**0.25)
    values = ", ".join(str(v) for v in range(1, side + 1))
    return (
        f"extends: {BASES[1]}\nmatrix:\n  max_cells: {2 * side**4}\n"
        "  exclude: [{fp8_rollout: true}]\n  axes:\n"
        f"    tp: [{values}]\n    engine: [{values}]\n    dp: [{values}]\n    ep: [{values}]\n"
        "args:\n  perf:\n    tensor-model-parallel-size: ${matrix.tp}\n"
        "  sglang:\n    rollout-num-gpus-per-engine: ${matrix.engine}\n"
        "    sglang-dp-size: ${matrix.dp}\n    sglang-ep-size: ${matrix.ep}\n"
    )


def timed(paths: list[Path]) -> tuple[int, int, float]:
    started = time.perf_counter()
    cells = [cell for path in paths for cell in pipeline.cells(path)]
    errors = sum(any(p.severity == "error" for p in check.run(cell)) for cell in cells)
    return len(cells), errors, time.perf_counter() - started


def main() -> int:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    matrix_cells = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"cell{i}.yaml" for i in range(files)]
        for path, text in zip(paths, overlays(files), strict=True):
            path.write_text(text)
        count, errors, seconds = timed(paths)
        print(f"{files} spec files -> {count} cells validated in {seconds:.2f} s ({errors} with errors)")
        spec = Path(folder) / "matrix.yaml"
        spec.write_text(matrix_spec(matrix_cells))
        count, errors, seconds = timed([spec])
        print(f"1 spec with a matrix -> {count} cells expanded and validated in {seconds:.2f} s", end=" ")
        print(f"({errors} with errors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
