#!/usr/bin/env python3
"""How fast does the CLI start? Each light command as a fresh process, side by side with the bare
``python -c "import pydantic, yaml"`` in the same run (interleaved, so a busy machine slows both
alike): medians of wall-clock and of CPU time (user + system of the child, which a shared machine
disturbs far less), each as a ratio to the bare import's. Bytecode is written and used, as in an
installed run-matrix (PYTHONDONTWRITEBYTECODE is dropped for the children).

``validate`` is timed three ways, each of ``tools/bench_startup/specs/`` (a frozen copy of
``matrices/`` as it was on 2026-12-05, so that specs added later do not move the figure): cold
(``--no-cache``: every cell checked), checked and recorded into an empty cache (the first run after
any change), and warm (the verdict replayed from the cache: nothing changed). The cache is a private
temporary folder, never the user's.

The targets (issue 45, restating issue 19's 2.5x the bare import, which building one pydantic model
already costs): cold at most 2.0x the one-model floor (import pydantic and yaml, build and use one
model), warm at most 1.0x the bare import; both in CPU time.

  python tools/bench_startup.py [RUNS]     # default: 15 runs of each
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = "from runner.cli import console; console()"
SPECS = "tools/bench_startup/specs/"  # the frozen copy
BARE = "import pydantic, yaml"
ONE_MODEL = "pydantic: one model built and used"
COLD = "validate specs/ (cold: --no-cache)"
RECORDED = "validate specs/ (checked, recorded)"
WARM = "validate specs/ (warm: replayed)"
TARGETS = {COLD: (ONE_MODEL, 2.0), WARM: (BARE, 1.0)}  # command: (measured against, at most)
FLOOR = "import yaml\nfrom pydantic import BaseModel\nclass A(BaseModel):\n    x: int\nA(x=1)"


def commands(history_db: str) -> dict[str, list[str]]:
    python = [sys.executable, "-c"]
    return {
        BARE: [*python, "import pydantic, yaml"],
        # what any pydantic validation costs on top: pydantic's lazy import made real, one model built
        ONE_MODEL: [*python, FLOOR],
        "run-matrix --help": [*python, CLI, "--help"],
        COLD: [*python, CLI, "validate", SPECS, "--no-cache"],
        RECORDED: [*python, CLI, "validate", SPECS],
        WARM: [*python, CLI, "validate", SPECS],
        "render rocm/glm5-async.yaml": [*python, CLI, "render", "rocm/glm5-async.yaml"],
        "list matrices/": [*python, CLI, "list", "matrices/"],
        "explain nv/glm5-colocate.yaml KEY": [
            *python,
            CLI,
            "explain",
            "nv/glm5-colocate.yaml",
            "args.sglang.sglang-dp-size",
        ],
        "diff nv/glm5-colocate.yaml rocm/glm5-async.yaml": [
            *python,
            CLI,
            "diff",
            "nv/glm5-colocate.yaml",
            "rocm/glm5-async.yaml",
        ],
        "history CELL (SQLite, 20 of 100 runs)": [
            *python,
            CLI,
            "history",
            "bench/cell-0",
            "--history",
            history_db,
            "--no-plot",
        ],
    }


def seed_history(path: str) -> None:
    """One cell with 100 recorded runs (as tools/bench_history.py fills it): `history CELL` shows 20."""
    subprocess.run(
        [sys.executable, "-c", SEED, path],
        cwd=ROOT,
        check=True,
    )


SEED = """
import sys
sys.path.insert(0, "tools")
from bench_history import fill
from runner.results.history.location import parse
from runner.results.history.store import Store
store = Store.open(parse(sys.argv[1], "--history", from_command_line=True))
fill(store, 1)
store.close()
"""


ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "RUN_MATRIX_NO_CACHE")}


def timed(argv: list[str], cache: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of ``argv``, with ``cache`` as run-matrix's cache."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**ENV, "RUN_MATRIX_CACHE_DIR": cache},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 2):  # 2: a spec with problems still starts and answers
        raise SystemExit(f"{' '.join(argv[2:])}: exit {done.returncode}\n{done.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "history.sqlite")
        history = True
        try:
            seed_history(db)
        except subprocess.CalledProcessError:
            history = False
        table = commands(db)
        if not history:
            table.pop("history CELL (SQLite, 20 of 100 runs)")
        wall: dict[str, list[float]] = {name: [] for name in table}
        cpu: dict[str, list[float]] = {name: [] for name in table}
        cache = os.path.join(folder, "cache")
        for argv in table.values():  # warm the file cache, write the .pyc files, fill the cache once
            timed(argv, cache)
        for run in range(runs):
            for name, argv in table.items():
                # the recorded run starts from an empty cache each time: the first run after a change
                seconds, used = timed(
                    argv, os.path.join(folder, f"empty-{run}") if name == RECORDED else cache
                )
                wall[name].append(seconds)
                cpu[name].append(used)
    load = os.getloadavg()[0]
    floor = {kind: statistics.median(t[BARE]) for kind, t in (("wall", wall), ("cpu", cpu))}
    print(f"{runs} runs each, medians; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"  {'':<50} {'wall':>8} {'ratio':>6}  {'CPU':>8} {'ratio':>6}")
    for name in table:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(
            f"  {name:<50} {w * 1000:5.0f} ms {w / floor['wall']:5.2f}x"
            f"  {c * 1000:5.0f} ms {c / floor['cpu']:5.2f}x"
        )
    for name, (against, target) in TARGETS.items():
        ratios = {
            kind: statistics.median(t[name]) / statistics.median(t[against])
            for kind, t in (("wall", wall), ("cpu", cpu))
        }
        verdict = "meets" if ratios["cpu"] <= target else "misses"
        print(
            f"{name} is {ratios['cpu']:.2f}x {against!r} in CPU time ({ratios['wall']:.2f}x wall):"
            f" {verdict} the target of {target}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
