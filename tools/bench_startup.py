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

Cold ``validate`` is also run as the installed ``run-matrix`` console script beside this
interpreter (what README's first command installs, editable), whose start-up a user pays too; that
row's ratio is wall-clock.

The targets (issue 57): cold at most 1.5x the one-model floor (import pydantic and yaml, build and
use one model), in CPU time through ``python -c`` and in wall-clock as the installed command; warm
at most 1.0x the bare import in CPU time.

  python tools/bench_startup.py [RUNS]                       # default: 15 runs of each
  python tools/bench_startup.py [RUNS] --baseline TREE       # and TREE's run-matrix, interleaved
  python tools/bench_startup.py --instructions [--baseline TREE]   # counted by valgrind, once each

With ``--baseline TREE`` (a checkout of another commit, e.g. ``git worktree add /tmp/base REV``),
every command also runs as TREE's code (``python -c`` in TREE imports TREE's ``runner``) right after
this tree's, in the same loop and against the same floors, and each ratio is printed for both with
the difference: a change's cost measured side by side, not one run after the other.

``--instructions`` counts the instructions the one-model floor and cold ``validate`` execute
(valgrind's callgrind, one run each: the count does not depend on what else the machine runs), for a
change too small for the timings of a shared machine to tell apart. Time is not proportional to it
(a process's start costs time that executes few instructions), so the targets stay the timed ones.
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
INSTALLED = "run-matrix validate specs/ --no-cache (installed)"
# command: (measured against, at most, in which time)
TARGETS = {COLD: (ONE_MODEL, 1.5, "cpu"), INSTALLED: (ONE_MODEL, 1.5, "wall"), WARM: (BARE, 1.0, "cpu")}
FLOORS = (BARE, ONE_MODEL)  # run once per round, in this tree: the same for both trees
THIS_TREE_ONLY = (INSTALLED,)  # the console script installed beside this interpreter runs this tree


def runs_in(name: str, label: str) -> bool:
    """Whether command ``name`` is run in the tree labelled ``label`` (the floors and the installed
    command only in ``this``)."""
    return label == "this" or name not in (*FLOORS, *THIS_TREE_ONLY)


FLOOR = "import yaml\nfrom pydantic import BaseModel\nclass A(BaseModel):\n    x: int\nA(x=1)"


def commands(history_db: str) -> dict[str, list[str]]:
    python = [sys.executable, "-c"]
    return {
        BARE: [*python, "import pydantic, yaml"],
        # what any pydantic validation costs on top: pydantic's lazy import made real, one model built
        ONE_MODEL: [*python, FLOOR],
        "run-matrix --help": [*python, CLI, "--help"],
        COLD: [*python, CLI, "validate", SPECS, "--no-cache"],
        INSTALLED: [str(Path(sys.executable).parent / "run-matrix"), "validate", SPECS, "--no-cache"],
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


def timed(argv: list[str], cache: str, tree: Path = ROOT) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of ``argv`` in ``tree``, with ``cache`` as run-matrix's cache."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=tree,
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


Times = dict[str, dict[str, dict[str, list[float]]]]  # tree label -> "wall"|"cpu" -> command -> seconds


def measure(table: dict[str, list[str]], runs: int, folder: str, trees: dict[str, Path]) -> Times:
    """Every command's seconds in each tree (``this``, and ``baseline`` when given), interleaved."""
    found: Times = {label: {"wall": {n: [] for n in table}, "cpu": {n: [] for n in table}} for label in trees}
    cache = {label: os.path.join(folder, f"cache-{label}") for label in trees}
    for label, tree in trees.items():  # warm the file cache, write the .pyc files, fill the cache once
        for name, argv in table.items():
            if runs_in(name, label):
                timed(argv, cache[label], tree)
    for run in range(runs):
        for name, argv in table.items():
            for label, tree in trees.items():
                if not runs_in(name, label):
                    continue
                # the recorded run starts from an empty cache each time: the first run after a change
                empty = os.path.join(folder, f"empty-{label}-{run}")
                seconds, used = timed(argv, empty if name == RECORDED else cache[label], tree)
                found[label]["wall"][name].append(seconds)
                found[label]["cpu"][name].append(used)
    for label in trees:  # the floors, measured once per round, are every tree's
        for kind in ("wall", "cpu"):
            for name in FLOORS:
                found[label][kind][name] = found["this"][kind][name]
    return found


def report(table: dict[str, list[str]], runs: int, found: Times) -> None:
    this = found["this"]
    base = found.get("baseline")
    floor = {kind: statistics.median(this[kind][BARE]) for kind in ("wall", "cpu")}
    print(f"{runs} runs each, medians; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    extra = f"  {'baseline':>8} {'change':>7}" if base else ""
    print(f"  {'':<50} {'wall':>8} {'ratio':>6}  {'CPU':>8} {'ratio':>6}{extra}")
    for name in table:
        w, c = statistics.median(this["wall"][name]), statistics.median(this["cpu"][name])
        line = (
            f"  {name:<50} {w * 1000:5.0f} ms {w / floor['wall']:5.2f}x"
            f"  {c * 1000:5.0f} ms {c / floor['cpu']:5.2f}x"
        )
        if base and runs_in(name, "baseline"):
            b = statistics.median(base["cpu"][name]) / floor["cpu"]
            line += f"  {b:7.2f}x {c / floor['cpu'] - b:+6.2f}x"
        print(line)
    for name, (against, target, kind) in TARGETS.items():
        for label, times in found.items():
            if not runs_in(name, label):
                continue
            ratio = {
                k: statistics.median(times[k][name]) / statistics.median(times[k][against]) for k in times
            }
            other = "wall" if kind == "cpu" else "cpu"
            verdict = "meets" if ratio[kind] <= target else "misses"
            who = "" if label == "this" else " (baseline)"
            print(
                f"{name}{who} is {ratio[kind]:.2f}x {against!r} in {'CPU' if kind == 'cpu' else 'wall'} time"
                f" ({ratio[other]:.2f}x {other}): {verdict} the target of {target}x"
            )


def instructions(argv: list[str], tree: Path) -> int:
    """The instructions ``argv`` executes in ``tree``, as valgrind's callgrind counts them."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=tree,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    counted = [line.rsplit(":", 1)[1] for line in done.stderr.splitlines() if "Collected :" in line]
    if not counted:
        raise SystemExit(f"valgrind counted nothing for {' '.join(argv[2:])}:\n{done.stderr[-2000:]}")
    return int(counted[0])


def count(trees: dict[str, Path]) -> None:
    """Cold validate's instructions against the one-model floor's, in each tree (bytecode written first)."""
    table = commands("")
    for tree in trees.values():
        timed(table[COLD], tempfile.gettempdir(), tree)
    floor = instructions(table[ONE_MODEL], ROOT)
    print(f"  {ONE_MODEL:<50} {floor / 1e6:7.0f} M instructions")
    for label, tree in trees.items():
        cold = instructions(table[COLD], tree)
        who = "" if label == "this" else f" ({label})"
        print(f"  {COLD + who:<50} {cold / 1e6:7.0f} M instructions  {cold / floor:.3f}x the floor")


def main() -> int:
    arguments = sys.argv[1:]
    trees = {"this": ROOT}
    if "--baseline" in arguments:
        at = arguments.index("--baseline")
        trees["baseline"] = Path(arguments[at + 1]).resolve()
        del arguments[at : at + 2]
    if "--instructions" in arguments:
        count(trees)
        return 0
    runs = int(arguments[0]) if arguments else 15
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "history.sqlite")
        table = commands(db)
        if not Path(table[INSTALLED][0]).is_file():
            missing = table.pop(INSTALLED)[0]
            print(f"no console script {missing}: `pip install -e .` installs it", file=sys.stderr)
            TARGETS.pop(INSTALLED)
        try:
            seed_history(db)
        except subprocess.CalledProcessError:
            table.pop("history CELL (SQLite, 20 of 100 runs)")
        report(table, runs, measure(table, runs, folder, trees))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
