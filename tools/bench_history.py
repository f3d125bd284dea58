#!/usr/bin/env python3
"""How fast is the history store? Three figures, each against the issue's budget:

* recording one cell (10 metrics x 100 steps, 10 gates, one transaction): budget 50 ms;
* judging CELLS cells x 10 banded metrics, each against its last 100 trusted runs (each run with
  3 steps of every metric), on SQLite: `steps: last` (10 coordinates a cell; budget 1 s for 1,000
  cells), then `steps: all` (30), then `steps: last` against the default baseline of 10 runs;
* `run-matrix history CELL` as a fresh process (budget 300 ms), beside the bare interpreter and
  `run-matrix --help`: medians of wall-clock and of CPU time (the machine may be shared), and
  in process (the query and the table alone).

  python tools/bench_history.py [CELLS]     # default: 1000 cells
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runner.cli import main as run_matrix
from runner.results.history import schema
from runner.results.history.location import parse
from runner.results.history.recorder import Recorder
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import Gate, Sample
from schemas.run import Expectation

METRICS = [f"train/metric_{i}" for i in range(10)]
RUNS = 100
STEPS = 3
BAND = {"rel_up": 0.5, "abs_floor_up": 0.02, "rel_down": 0.8, "abs_floor_down": 0.02}


def expect(steps: str, runs: int = RUNS) -> dict[str, Expectation]:
    return {
        name: Expectation.model_validate({"band": BAND, "steps": steps, "baseline": {"runs": runs}})
        for name in METRICS
    }


def identity(cell: int) -> Identity:
    return Identity(f"bench/cell-{cell}", "bench.yaml", f"{cell:012x}", "h200", "31f1ca96", "0.1.0")


def series(steps: int, offset: float = 0.0) -> dict[str, list[Sample]]:
    return {name: [Sample("step", k, 1.0 + offset + 0.01 * k) for k in range(steps)] for name in METRICS}


def bench_record(store: Store, count: int = 50) -> float:
    gates = [Gate(name, -1, 99, 1.0, 1.0, 0.5, 1.5, 10, "pass", True, "") for name in METRICS]
    times = []
    for i in range(count):
        record = AttemptRecord(
            identity(10**6 + i), 1, "job", "succeeded", "passed", True, "", series(100), gates
        )
        started = time.perf_counter()
        store.record(record)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def fill(store: Store, cells: int) -> None:
    """CELLS x 100 trusted runs of 10 metrics x 3 steps (and their last values), in bulk through
    SQLite's own driver (a benchmark's set-up, not how run-matrix writes: that is ``Store.record``,
    timed above). As in a real store, where each nightly run records every cell, one cell's runs
    lie far apart: run 1 of every cell, then run 2 of every cell, ..."""
    columns = list(_run_row(identity(0), "", now="").keys())
    insert_run = f"INSERT INTO rm_runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    insert_sample = "INSERT INTO rm_samples (run, metric, kind, step, value, nonfinite, last) VALUES "
    insert_sample += "(?, ?, ?, ?, ?, ?, ?)"
    insert_last = "INSERT INTO rm_last_values (content_hash, hardware, metric, run, value) "
    insert_last += "VALUES (?, ?, ?, ?, ?)"
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(sep=" ")
    for run in range(RUNS):
        with store.writing() as connection:
            cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            samples, lasts = [], []
            for cell in range(cells):
                ident = identity(cell)
                cursor.execute(insert_run, list(_run_row(ident, f"{cell:06x}{run:06x}", now).values()))
                seq = cursor.lastrowid
                for name in METRICS:
                    values = [1.0 + 0.001 * run + 0.01 * k for k in range(STEPS)]
                    samples += [
                        (seq, name, "step", k, v, None, int(k == STEPS - 1)) for k, v in enumerate(values)
                    ]
                    lasts.append((ident.content_hash, ident.hardware, name, seq, values[-1]))
            cursor.executemany(insert_sample, samples)
            cursor.executemany(insert_last, lasts)


def _run_row(ident: Identity, run_id: str, now: str) -> dict[str, object]:
    """A row of rm_runs: a trusted, passed run of 600 s. Columns a later schema version adds keep
    their defaults; one without a default fails here, by name, rather than by a count of bindings."""
    row: dict[str, object] = {
        "id": run_id,
        "recorded_at": now,
        "cell": ident.cell,
        "spec": ident.spec,
        "content_hash": ident.content_hash,
        "hardware": ident.hardware,
        "miles_commit": ident.miles_commit,
        "version": ident.version,
        "attempt": 1,
        "submission_id": "job",
        "outcome": "succeeded",
        "status": "passed",
        "trusted": 1,
        "note": "",
        "seconds": 600.0,
    }
    required = {c.name for c in schema.runs.columns if not c.nullable and c.server_default is None}
    if missing := required - row.keys() - {"seq"}:
        raise SystemExit(
            f"bench_history: rm_runs has new required columns {sorted(missing)}: give them values"
        )
    return row


def bench_judge(store: Store, cells: int, steps: str, runs: int = RUNS) -> tuple[float, float, int]:
    """Seconds of wall clock and of CPU (this process; the machine may be shared) to judge every
    cell: the medians of 3 rounds."""
    recorder = Recorder(store)
    bands = expect(steps, runs)
    current = series(STEPS, offset=0.05)
    walls, cpus = [], []
    for _ in range(3):
        started, cpu = time.perf_counter(), time.process_time()
        judged = [recorder.judge_expectations(identity(cell), bands, current) for cell in range(cells)]
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    verdicts = {g.verdict for gates in judged for g in gates}
    assert verdicts == {"pass"}, verdicts  # every coordinate had its baseline
    return statistics.median(walls), statistics.median(cpus), sum(len(g) for g in judged)


def bench_history(path: str) -> dict[str, tuple[float, float]]:
    """``history`` of one cell: (wall, CPU) medians as a fresh process, beside the bare interpreter
    and ``run-matrix --help``; and (wall, wall) in this process, imports done (the query and table)."""
    argv = ["history", "bench/cell-7", "--history", path, "--no-plot"]
    with contextlib.redirect_stdout(io.StringIO()):
        run_matrix(argv)  # imports done once, as in a warm process
        started = time.perf_counter()
        for _ in range(10):
            run_matrix(argv)
    in_process = (time.perf_counter() - started) / 10
    script = Path(sys.executable).parent / "run-matrix"
    program = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from runner.cli import console; console()"]
    )
    return {
        "python -c pass": _fresh([sys.executable, "-c", "pass"]),
        "run-matrix --help": _fresh([*program, "--help"]),
        "run-matrix history CELL": _fresh([*program, *argv]),
        "in process": (in_process, in_process),
    }


def _fresh(argv: list[str], times: int = 11) -> tuple[float, float]:
    """Medians of wall-clock and of CPU (user + system) seconds of ``argv`` as a fresh process."""
    walls, cpus = [], []
    for _ in range(times):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cells", nargs="?", type=int, default=1000)
    cells = parser.parse_args().cells
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores, load average {load}")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "history.sqlite")
        store = Store.open(parse(path, "--history", from_command_line=True))
        print(
            f"recording one cell (1,000 samples, 10 gates): {bench_record(store) * 1000:.1f} ms (budget 50)"
        )
        started = time.perf_counter()
        fill(store, cells)
        shape = f"{cells} cells x {RUNS} runs x {len(METRICS)} metrics x {STEPS} steps"
        print(f"filled {shape} in {time.perf_counter() - started:.0f} s")
        for steps, runs in (("last", RUNS), ("all", RUNS), ("last", 10)):
            seconds, cpu, count = bench_judge(store, cells, steps, runs)
            print(
                f"judging {cells} cells x {len(METRICS)} metrics (steps: {steps}, {count} coordinates) "
                f"against the last {runs} runs each: {seconds:.2f} s, {cpu:.2f} s of CPU "
                "(budget 1 s for 1,000 x 10 against 100)"
            )
        store.close()
        for what, (wall, cpu) in bench_history(path).items():
            print(f"{what}: {wall * 1000:.0f} ms, {cpu * 1000:.0f} ms of CPU (history's budget: 300 ms)")


if __name__ == "__main__":
    main()
