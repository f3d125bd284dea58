#!/usr/bin/env python3
"""How long does `run-matrix import TREE` take against a sequential capture of the same tree?

  python tools/bench_suite_import.py MILES_CHECKOUT [TREE] [-j N]   # TREE default: tests/e2e

Side by side, in one run on this machine:

* baseline: every ``test_*.py`` of TREE recorded once, one sandbox after another (``capture.record``
  with the checkout, nothing else of an import);
* cold: ``run-matrix import TREE --miles-root MILES_CHECKOUT -o OUT`` with an empty
  recordings cache (its own ``RUN_MATRIX_CACHE_DIR``), and the seconds to its first progress output
  with stderr a terminal (a pty: the live bar);
* warm: the same command again into another OUT, the cache kept (an unchanged tree).

Each line gives the wall seconds, the last one the ratios to the baseline; the load average is
printed first.
``--rounds N`` measures all three N times, the baseline and the cold import in turns (every other
round the cold import first: a shared machine slows as it stays busy), each cold import into a cache
of its own, and ends with the medians and their ratios.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import pty
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the console script installed beside this interpreter (README's `pip install -e .`), else the PATH's
INSTALLED = Path(sys.executable).with_name("run-matrix")
CONSOLE = str(INSTALLED) if INSTALLED.is_file() else "run-matrix"


def baseline(checkout: Path, tree: Path) -> tuple[float, int]:
    from runner.errors import RunMatrixError
    from runner.importer import capture
    from runner.knowledge import bundled

    tests = sorted(p for p in tree.rglob("test_*.py") if p.is_file() and not p.is_symlink())
    secrets = bundled.conventions().secrets
    started = time.perf_counter()
    for test in tests:
        with contextlib.suppress(RunMatrixError):  # a refusal is a capture too
            capture.record(test, {}, secrets, miles_root=checkout)
    return time.perf_counter() - started, len(tests)


def suite(checkout: Path, tree: Path, out: Path, cache: Path, jobs: int) -> tuple[float, float, int, str]:
    """Wall seconds, seconds to the first progress output (in a terminal: stderr is a pty), exit
    status, and the tests' outcomes counted."""
    command = [CONSOLE, "import", str(tree), "--miles-root", str(checkout), "-o", str(out)]
    command += ["-j", str(jobs), "--format", "json"]
    env = {**os.environ, "RUN_MATRIX_CACHE_DIR": str(cache)}
    terminal, shown = pty.openpty()
    started = time.perf_counter()
    child = subprocess.Popen(command, stderr=shown, stdout=subprocess.PIPE, env=env, cwd=ROOT)
    os.close(shown)
    first = [0.0]

    def drain() -> None:
        with contextlib.suppress(OSError):
            while os.read(terminal, 1 << 16):
                first[0] = first[0] or time.perf_counter() - started

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    output, _ = child.communicate()
    wall = time.perf_counter() - started
    reader.join(1)
    os.close(terminal)
    outcomes = collections.Counter(t["outcome"] for t in json.loads(output or "{}").get("tests", {}).values())
    return wall, first[0], child.returncode, ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("tree", type=Path, nargs="?")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=1, help="measure each this many times (medians)")
    args = parser.parse_args()
    tree = args.tree or args.checkout / "tests" / "e2e"
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; tree {tree}", flush=True)
    taken: dict[str, list[float]] = {"baseline": [], "cold": [], "warm": []}
    for number in range(args.rounds):
        if number % 2 == 0:
            taken["baseline"].append(_baseline(args.checkout, tree))
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "cache"
            for name in ("cold", "warm"):
                taken[name].append(_suite(args.checkout, tree, Path(folder) / name, cache, args.jobs, name))
        if number % 2 == 1:
            taken["baseline"].append(_baseline(args.checkout, tree))
    middle = {name: statistics.median(seconds) for name, seconds in taken.items()}
    print(
        f"{'medians of ' + str(args.rounds) if args.rounds > 1 else 'one round'}: baseline"
        f" {middle['baseline']:.1f} s, cold {middle['cold']:.1f} s (ratio"
        f" {middle['cold'] / middle['baseline']:.2f}), warm {middle['warm']:.1f} s (ratio"
        f" {middle['warm'] / middle['baseline']:.2f})",
        flush=True,
    )
    print(f"load average {os.getloadavg()[0]:.2f} at the end", flush=True)


def _baseline(checkout: Path, tree: Path) -> float:
    seconds, count = baseline(checkout, tree)
    print(f"baseline: {count} tests captured one by one: {seconds:.1f} s", flush=True)
    return seconds


def _suite(checkout: Path, tree: Path, out: Path, cache: Path, jobs: int, name: str) -> float:
    wall, first, status, counted = suite(checkout, tree, out, cache, jobs)
    print(
        f"import -j {jobs} ({name} cache): {wall:.1f} s, first progress in a terminal after {first:.1f} s,"
        f" exit {status}: {counted}",
        flush=True,
    )
    return wall


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
