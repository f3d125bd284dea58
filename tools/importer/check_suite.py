#!/usr/bin/env python3
"""Import every test of a real miles checkout that launches through execute_train, without and
with --miles-root, and count what imports and round-trips (the import checks the round trip
before it writes anything, so exit 0 means render == what the script launches).

  python tools/importer/check_suite.py MILES_CHECKOUT [--only-with-root] [--timeout S]

Prints one line per test and mode (exit code, first line of the reason) and the figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path


def tests_of(checkout: Path) -> list[Path]:
    found = []
    for path in sorted((checkout / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "execute_train" in text and "__main__" in text:
            found.append(path)
    return found


def hardware_of(path: Path) -> str:
    return "mi355x" if "rocm" in path.name or "amd" in path.name else "h200"


def import_one(path: Path, out: Path, root: Path | None, timeout: str) -> tuple[int, str]:
    command = ["run-matrix", "import", str(path), "--hardware", hardware_of(path), "-o", str(out), "--force"]
    command += ["--timeout", timeout] + (["--miles-root", str(root)] if root else [])
    done = subprocess.run(command, capture_output=True, text=True)
    errors = [line.split(" error ", 1)[1] for line in done.stderr.splitlines() if " error " in line]
    other = [line for line in done.stderr.splitlines() if line.startswith("run-matrix:")]
    return done.returncode, [*errors, *other, ""][0][:240]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--only-with-root", action="store_true")
    parser.add_argument("--timeout", default="60")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    tests = tests_of(checkout)
    modes = [checkout] if args.only_with_root else [None, checkout]
    passed = {str(mode): 0 for mode in modes}
    with tempfile.TemporaryDirectory() as folder:
        for path in tests:
            for mode in modes:
                code, reason = import_one(path, Path(folder) / f"{path.stem}.yaml", mode, args.timeout)
                passed[str(mode)] += code == 0
                label = "--miles-root" if mode else "shipped"
                print(f"{code} {label:<12} {path.relative_to(checkout)}: {'ok' if code == 0 else reason}")
    for mode in modes:
        label = "with --miles-root" if mode else "without --miles-root"
        print(f"{passed[str(mode)]}/{len(tests)} tests that launch through execute_train import {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
