#!/usr/bin/env python3
"""Time `validate --miles-python`: miles' own parse_args() on shipped specs, in one sandboxed process.

  python tools/bench_miles_parser.py MILES_CHECKOUT [PY]     (PY default: .oracles/miles/bin/python)

Prints the whole time, the start (importing miles, SGLang, Megatron and torch) and the time per cell
as the worker measured it around parse_args().
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner import miles_parser, pipeline  # noqa: E402
from runner.errors import SpecError  # noqa: E402


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    python = Path(argv[1]) if len(argv) > 1 else ROOT / ".oracles/miles/bin/python"
    broken: list[tuple[Path, SpecError]] = []
    cells = pipeline.select([str(ROOT / "matrices")], None, broken)
    cells = [cell for cell in cells if cell.spec.miles_version in (None, "31f1ca96")]  # miles main's
    timed: list[float] = []
    original = miles_parser.verdicts.problems

    def keep(cell: object, reply: dict[str, object] | None) -> object:
        if reply is not None and isinstance(reply.get("seconds"), float):
            timed.append(float(reply["seconds"]))  # type: ignore[arg-type]
        return original(cell, reply)  # type: ignore[arg-type]

    miles_parser.verdicts.problems = keep  # type: ignore[assignment]
    started = time.perf_counter()
    found = miles_parser.check(cells, python, root)
    whole = time.perf_counter() - started
    refused = sum(1 for problems in found.values() if any(p.severity == "error" for p in problems))
    parse = sum(timed)
    print(f"{len(cells)} cells ({refused} refused) in {whole:.1f} s: start {whole - parse:.1f} s,")
    print(f"parse_args() {parse / max(len(timed), 1):.2f} s per cell on average (first {timed[0]:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
