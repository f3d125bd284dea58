#!/usr/bin/env python3
"""What the flag catalog costs validation: the same runs with and without it, side by side.

  python tools/bench_flags.py [RUNS] [FILES] [CELLS]     # defaults: 9 runs, 1000 files, 10000 cells

* `run-matrix validate matrices/` as a user runs it: a fresh interpreter each time (start-up and
  the catalog's first load included), RUNS times each way, interleaved; the medians compared;
* the bigger workloads of tools/bench_validate.py (FILES spec files, a CELLS-cell matrix), in-process.

"Without the catalog" is the same code with ``runner.knowledge.flags.choose`` answering None (cells
then carry no catalog: no alias resolution and no F rules), which is what validate did before.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

WITHOUT = "import runner.knowledge.flags as f; f.choose = lambda *a: None; "
VALIDATE = "from runner.cli import main; raise SystemExit(main(['validate', 'matrices/']))"


def fresh(with_catalog: bool) -> float:
    code = ("" if with_catalog else WITHOUT) + VALIDATE
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def in_process(with_catalog: bool, files: int, cells: int) -> tuple[float, float]:
    import bench_validate

    import runner.knowledge.flags as flags

    original = flags.choose
    flags.choose = original if with_catalog else (lambda *a: None)  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as folder:
            paths = [Path(folder) / f"cell{i}.yaml" for i in range(files)]
            for path, text in zip(paths, bench_validate.overlays(files), strict=True):
                path.write_text(text)
            spec = Path(folder) / "matrix.yaml"
            spec.write_text(bench_validate.matrix_spec(cells))
            return bench_validate.timed(paths)[2], bench_validate.timed([spec])[2]
    finally:
        flags.choose = original  # type: ignore[assignment]


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    cells = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(runs):
        for with_catalog in (False, True):
            timings[with_catalog].append(fresh(with_catalog))
    for name, pick in (("median", statistics.median), ("best", min)):
        without, with_ = pick(timings[False]), pick(timings[True])
        print(f"validate matrices/ (fresh process, {name} of {runs}):", end=" ")
        change = (with_ / without - 1) * 100
        print(f"without the catalog {without:.3f} s, with it {with_:.3f} s ({change:+.1f}%)")
    best: dict[bool, tuple[float, float]] = {}
    for _ in range(2):  # alternate, keep the faster of two: the first run also warms shared caches
        for with_catalog in (False, True):
            files_s, matrix_s = in_process(with_catalog, files, cells)
            old = best.get(with_catalog, (files_s, matrix_s))
            best[with_catalog] = (min(old[0], files_s), min(old[1], matrix_s))
    for with_catalog in (False, True):
        label = "with the catalog   " if with_catalog else "without the catalog"
        files_s, matrix_s = best[with_catalog]
        print(f"{label}: {files} spec files {files_s:.2f} s;", end=" ")
        print(f"a {cells}-cell matrix {matrix_s:.2f} s (best of 2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
