#!/usr/bin/env python3
"""Where a cold ``validate``'s CPU time goes, beside the one-model floor's (tools/bench_startup.py's
"pydantic: one model built and used"), phase by phase: the profile behind that benchmark's ratio.

Each run is a fresh interpreter (bytecode written and used, as installed) that times its own phases
in CPU time (user + system, ``getrusage``): the interpreter's start-up (counted before the first
line runs), the imports, each step of the pipeline. The steps are timed by wrapping the module
attributes the pipeline calls through (``pipeline.compose``, ``build.cells``, ``check.run``, ...);
the class definitions by wrapping ``dataclasses._process_class`` and pydantic's model metaclass,
counting only run-matrix's own classes. Medians of the runs, interleaved with the floor's.

  python tools/bench_startup_profile.py [RUNS]    # default: 11 runs of each
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from bench_startup import ENV, ROOT, SPECS  # its environment, and the frozen copy of matrices/ it times

CLOCK = """
import resource
def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime
marks = {"interpreter start-up": cpu()}
spent, counts, within = {}, {}, {}  # the timers' totals, calls, and their totals at each mark
def mark(name):
    marks[name] = cpu()
    within[name] = {timer: (spent[timer], counts[timer]) for timer in spent}
"""

FLOOR = (
    CLOCK
    + """
import yaml
from pydantic import BaseModel
mark("import yaml, pydantic")
class A(BaseModel):
    x: int
A(x=1)
mark("one model built and used")
import json
print(json.dumps({"marks": marks, "within": within, "counts": counts, "modules": 0}))
"""
)

COLD = (
    CLOCK
    + """
import dataclasses, functools, json, sys

inside = set()

def timed(name, function, ours=lambda *a, **k: True):
    '''function, its CPU time added to spent[name] (a call within one already timed is not counted
    twice) and its calls counted, when ours(...) says the call is run-matrix's own.'''
    spent[name], counts[name] = 0.0, 0
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if name in inside or not ours(*args, **kwargs):
            return function(*args, **kwargs)
        inside.add(name)
        began = cpu()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += cpu() - began
            counts[name] += 1
            inside.discard(name)
    return wrapper

def own(module):
    return module.split(".")[0] in ("runner", "schemas")

dataclasses._process_class = timed(
    "dataclasses defined", dataclasses._process_class, lambda cls, *a, **k: own(cls.__module__)
)
import gc
from runner.cli import GC_THRESHOLDS, console
gc.set_threshold(*GC_THRESHOLDS)  # as console() does before its command imports anything
mark("import runner.cli (the command line)")
import yaml
from pydantic import BaseModel
mark("import yaml, pydantic")
from pydantic._internal import _model_construction as construction
construction.ModelMetaclass.__new__ = timed(
    "pydantic models defined",
    construction.ModelMetaclass.__new__,
    lambda mcs, name, bases, namespace, *a, **k: own(namespace.get("__module__", "")),
)
construction.complete_model_class = timed(
    "pydantic models built (schemas generated)",
    construction.complete_model_class,
    lambda cls, *a, **k: own(cls.__module__),
)
import schemas
mark("import schemas (the models)")
from runner import check, pipeline
from runner.cells import build
from runner.check import memory
from runner.cli import validate  # validate's module and the pipeline's, imported here to be timed
from runner.validate import checking
mark("import runner (the pipeline)")
run = check.run
pipeline.compose = timed("YAML read and composed", pipeline.compose)
build.cells = timed("cells built (resolved, modelled)", build.cells)
check.run = timed("rules", lambda *args: iter(list(run(*args))))  # a generator: timed as it is drained
memory._estimate = timed("the memory estimate (within the rules)", memory._estimate)
checking._supporting = timed("supporting files", checking._supporting)
sys.argv = ["run-matrix", "validate", sys.argv[1], "--no-cache"]
try:
    console()
except SystemExit:
    pass
mark("validate run")
modules = sum(map(own, sys.modules))
print("\\n" + json.dumps({"marks": marks, "within": within, "counts": counts, "modules": modules}))
"""
)


def probe(code: str, *argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT, env=ENV, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1])


Phase = tuple[float, dict[str, tuple[float, int]]]  # its seconds; each timer's seconds and calls in it


def phases(found: dict) -> dict[str, Phase]:
    """Each mark's CPU time since the one before (the first: since the process began), and what each
    timer added to it."""
    out: dict[str, Phase] = {}
    at, before = 0.0, {}
    for name, then in found["marks"].items():
        now = found["within"].get(name, {})
        added = {
            t: (now[t][0] - before.get(t, (0.0, 0))[0], now[t][1] - before.get(t, (0.0, 0))[1]) for t in now
        }
        out[name] = (then - at, {t: part for t, part in added.items() if part[1]})
        at, before = then, now
    return out


def medians(found: list[dict]) -> dict[str, Phase]:
    """Per phase, the median of its time and of each timer's part of it, in ms (calls: the first run's)."""
    each = [phases(f) for f in found]

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    table: dict[str, Phase] = {}
    for name in each[0]:
        timers = {t for p in each for t in p[name][1]}
        parts = {
            t: (ms([p[name][1].get(t, (0.0, 0))[0] for p in each]), each[0][name][1].get(t, (0.0, 0))[1])
            for t in timers
        }
        table[name] = (ms([p[name][0] for p in each]), parts)
    return table


def show(title: str, found: list[dict], floor: float | None = None) -> float:
    table = medians(found)
    total = sum(ms for ms, _ in table.values())
    ratio = f" = {total / floor:.2f}x the floor" if floor else ""
    print(f"  {title}: {total:.0f} ms{ratio}")
    for name, (ms, parts) in table.items():
        print(f"    {name:<56} {ms:5.0f} ms")
        for part, (part_ms, calls) in sorted(parts.items(), key=lambda kv: -kv[1][0]):
            print(f"      {part:<54} {part_ms:5.0f} ms  ({calls} calls)")
    return total


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    probe(FLOOR)  # bytecode written, files cached
    probe(COLD, SPECS)
    floors, colds = [], []
    for _ in range(runs):
        floors.append(probe(FLOOR))
        colds.append(probe(COLD, SPECS))
    load = os.getloadavg()[0]
    print(f"{runs} runs each, medians of CPU time; load average {load:.1f} on {os.cpu_count()} cores")
    floor = show("the one-model floor", floors)
    show(f"cold validate {SPECS} ({colds[0]['modules']} modules of run-matrix imported)", colds, floor)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
