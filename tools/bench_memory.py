#!/usr/bin/env python3
"""What does the memory estimate cost `validate`? A cold ``validate --no-cache`` of each suite as a fresh
process, side by side with the same validate whose rule registry lacks P10, P11 and P12 (removed in
the child process by this benchmark alone, before ``validate`` runs: run-matrix has no switch for
it), interleaved so a busy machine slows both alike. Medians of CPU time (user + system of the
child, the steadier figure on a shared machine) and of wall-clock; the difference per cell is the
estimate's cost, the ratio is with / without.

  python tools/bench_memory.py [RUNS] [--suite DIR ...] [--miles-root DIR]   # default: 15 runs

The suites: ``tools/bench_startup/specs/`` (the frozen copy of ``matrices/``, 21 cells) and each
``--suite`` (an imported miles suite: ``run-matrix import MILES/tests/e2e/ -o DIR --miles-root
MILES``), validated with ``--miles-root`` when given. Target (issue 52): at most 5 ms a cell.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tools" / "bench_startup" / "specs"
MEMORY_RULES = ("P10", "P11", "P12")
TARGET_MS = 5.0
# the child: optionally drop the memory rules from the registry, then run the CLI as the console does
CHILD = """
import sys
if sys.argv[1] == "without":
    from runner.check import RULES  # every rule registered as it imports
    for rule_id in {rules!r}:
        del RULES[rule_id]
sys.argv = ["run-matrix", *sys.argv[2:]]
from runner.cli import console
console()
"""
CELLS = """
import sys
from pathlib import Path
from runner import pipeline
root = Path(sys.argv[2]) if len(sys.argv) > 2 else None
print(len(pipeline.select([sys.argv[1]], broken=[], miles_root=root)))
"""
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "RUN_MATRIX_NO_CACHE")}


def timed(argv: list[str], cache: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv, cwd=ROOT, env={**ENV, "RUN_MATRIX_CACHE_DIR": cache}, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 2):  # 2: the suite has errors, which validate reports; still timed
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cells_of(suite: Path, miles_root: Path | None) -> int:
    argv = [sys.executable, "-c", CELLS, str(suite), *([str(miles_root)] if miles_root else [])]
    return int(subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True).stdout)


def bench(suite: Path, miles_root: Path | None, runs: int) -> str:
    child = CHILD.format(rules=MEMORY_RULES)
    command = ["validate", str(suite), "--no-cache"]
    command += ["--miles-root", str(miles_root)] if miles_root else []
    samples: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    with tempfile.TemporaryDirectory() as cache:
        for way in ("with", "without"):
            timed([sys.executable, "-c", child, way, *command], cache)  # bytecode written, not counted
        for _ in range(runs):
            for way in ("with", "without"):
                samples[way].append(timed([sys.executable, "-c", child, way, *command], cache))
    count = cells_of(suite, miles_root)
    wall = {way: statistics.median(s[0] for s in got) for way, got in samples.items()}
    cpu = {way: statistics.median(s[1] for s in got) for way, got in samples.items()}
    per_cell = (cpu["with"] - cpu["without"]) / count * 1000
    verdict = "within" if per_cell <= TARGET_MS else "OVER"
    return (
        f"{suite.name or suite} ({count} cells): CPU {cpu['with']:.3f} s with P10-P12, {cpu['without']:.3f} s"
        f" without ({cpu['with'] / cpu['without']:.2f}x), {per_cell:+.2f} ms a cell, {verdict} the"
        f" {TARGET_MS:g} ms target; wall {wall['with']:.3f} s / {wall['without']:.3f} s"
        f" ({wall['with'] / wall['without']:.2f}x,"
        f" {(wall['with'] - wall['without']) / count * 1000:+.2f} ms a cell)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="?", type=int, default=15)
    parser.add_argument("--suite", type=Path, action="append", default=[], help="an imported suite's folder")
    parser.add_argument("--miles-root", type=Path, help="validate each --suite with this checkout")
    args = parser.parse_args()
    print(f"{args.runs} runs each, interleaved; load average {os.getloadavg()[0]:.2f}")
    print(bench(SPECS, None, args.runs))
    for suite in args.suite:
        print(bench(suite.resolve(), args.miles_root, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
