#!/usr/bin/env python3
"""How fast is `run-matrix report --html`? A SQLite store of RUNS runs (default 10,000: the example's
five cells and CELLS more that no spec names, each run with a gated metric), then the whole
command in process: read the store, build every page, write the site. Budget: 10 s.

  python tools/bench_report_html.py [RUNS] [--cells CELLS]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.cli import main as run_matrix  # noqa: E402
from tools.report_html_example import insert, rows, write_specs  # noqa: E402

BUDGET_S = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=int, nargs="?", default=10_000)
    parser.add_argument("--cells", type=int, default=95, help="cells of the store beside the example's (95)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        specs = Path(folder) / "matrices"
        write_specs(specs)
        cells = [("nv/dense", "h200"), ("rocm/dense", "mi355x"), ("nv/moe", "h200"), ("rocm/moe", "mi355x")]
        cells += [(f"nv/stored-{i:03d}", "h200") for i in range(arguments.cells)]
        count = -(-arguments.runs // len(cells))
        made = insert("history.sqlite", list(rows(cells, count))[: arguments.runs])
        wall, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            code = run_matrix(["report", str(specs), "--history", "history.sqlite", "--html", "site"])
        wall = time.perf_counter() - wall
        cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu
        pages = sum(1 for _ in Path("site").rglob("*.html"))
        size = sum(p.stat().st_size for p in Path("site").rglob("*.html"))
    load = os.getloadavg()[0]
    verdict = "within" if wall <= BUDGET_S else "OVER"
    print(
        f"report --html: {made:,} runs of {len(cells)} cells -> {pages} pages ({size / 1e6:.1f} MB) in "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU (budget {BUDGET_S:.0f} s: {verdict}; "
        f"load average {load:.1f}); exit {code}"
    )
    return 0 if code == 0 and wall <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
