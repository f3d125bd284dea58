#!/usr/bin/env python3
"""Does `ci plan` spread cells as miles' own CI spreads its tests? A differential check.

In the sandbox (no network, the checkout read-only), miles' ``tests/ci/run_suite.py`` collects
every registered CUDA and ROCm test (``register_*_ci``: suite, est_time) and splits each suite
with its own ``auto_partition`` into 1 to 8 partitions. Here the same tests, as cells with that
est_time, go through ``runner.ci.plan.balance``: the shards must be the same lists, in the same
order, and each within the bound longest + total / count.

  python tools/compare_ci_plan_with_miles.py [--miles-root ~/miles]    # default: $MILES_ROOT
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from runner import sandbox
from runner.ci.plan import balance
from schemas.ci import CI
from schemas.ci_plan import PlannedCell

SIZES = (1, 2, 3, 4, 6, 8)
CHILD = f"""
import json, os, sys
sys.path.insert(0, os.getcwd())
from tests.ci.ci_register import HWBackend, collect_tests, discover_ci_files
from tests.ci.run_suite import auto_partition
tests = [t for t in collect_tests(discover_ci_files(), sanity_check=False)
         if t.backend in (HWBackend.CUDA, HWBackend.ROCM) and not t.disabled]
found = {{}}
for suite in sorted({{t.suite for t in tests}}):
    files = [t for t in tests if t.suite == suite]
    found[suite] = {{
        "tests": [[t.filename, t.est_time] for t in files],
        "partitions": {{
            size: [[f.filename for f in auto_partition(files, rank, size)] for rank in range(size)]
            for size in {SIZES!r}
        }},
    }}
with open(os.path.join(os.environ["{sandbox.OUT_VARIABLE}"], "partitions.json"), "w") as out:
    json.dump(found, out)
"""


def theirs(miles_root: Path) -> dict[str, dict[str, object]]:
    outcome = sandbox.run(
        [sandbox.PYTHON, "-c", CHILD], reads=[miles_root], cwd=miles_root, limits=sandbox.Limits(wall_s=120)
    )
    if outcome.returncode != 0 or "partitions.json" not in outcome.files:
        sys.exit(f"miles' run_suite.py failed in the sandbox ({outcome.returncode}):\n{outcome.output}")
    found: dict[str, dict[str, object]] = json.loads(outcome.files["partitions.json"])
    return found


def ours(tests: dict[str, int], size: int) -> list[list[str]]:
    cells = [
        PlannedCell(
            id=name,
            spec="-",
            hardware="-",
            gpus=1,
            est_time=est,
            est_source="spec",
            content_hash="-",
            ci=CI(),
        )
        for name, est in tests.items()
    ]
    return [[c.id for c in shard] for shard in balance(cells, size)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--miles-root", type=Path, default=os.environ.get("MILES_ROOT"))
    args = parser.parse_args()
    if args.miles_root is None:
        parser.error("give --miles-root or set $MILES_ROOT")
    suites = theirs(args.miles_root.resolve())
    compared = differ = tests = 0
    for suite, data in suites.items():
        listed = data["tests"]
        assert isinstance(listed, list) and isinstance(data["partitions"], dict)
        if any(float(est) != int(est) for _, est in listed):
            print(f"{suite}: an est_time that is not whole seconds; compared rounded down")
        times = {str(name): int(est) for name, est in listed}
        tests += len(times)
        for size, partitions in data["partitions"].items():
            mine = ours(times, int(size))
            compared += 1
            bound = max(times.values(), default=0) + sum(times.values()) / int(size)
            assert all(sum(times[c] for c in shard) <= bound for shard in mine), (suite, size)
            if mine != partitions:
                differ += 1
                print(f"{suite} in {size}: miles {partitions}\n  run-matrix {mine}")
        print(f"{suite}: {len(times)} tests, {sum(times.values())} s, {len(SIZES)} splits compared")
    print(
        f"{len(suites)} suites, {tests} tests, {compared} splits: "
        f"{compared - differ} identical, {differ} differ"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
