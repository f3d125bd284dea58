#!/usr/bin/env python3
"""What does the sandbox cost an import? The GLM-5 pair imported isolated and with
--trust-checkout (the same work without bubblewrap), side by side, medians of R rounds.

  python tools/bench_import.py [R]     # default: 5 rounds
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "tests/data/import" / f"test_glm5_744b_a40b_4layer{s}.py" for s in ("", "_rocm")]


def seconds(script: Path, out: Path, *options: str) -> float:
    command = ["run-matrix", "import", str(script), "--hardware", "h200", "-o", str(out), "--force"]
    command += ["--without-checkout", *options]  # tests/data lies in no miles checkout
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for script in SCRIPTS:
            out = Path(folder) / "out.yaml"
            isolated = statistics.median(seconds(script, out) for _ in range(rounds))
            trusted = statistics.median(seconds(script, out, "--trust-checkout") for _ in range(rounds))
            print(
                f"{script.name}: isolated {isolated:.2f} s, --trust-checkout {trusted:.2f} s,"
                f" ratio {isolated / trusted:.2f}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
