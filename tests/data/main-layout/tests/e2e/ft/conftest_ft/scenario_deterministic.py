"""A baseline/target comparison in the shape of miles' FT scenarios (written for run-matrix's tests).

The runner is built when this module is imported and keeps the comparison it was given, so the
import sandbox must make that very function record; and the comparison asserts in a line of its
own, on what the run left, besides calling a listed check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from miles.utils.test_utils.comparisons.metrics import compare_metrics
from tests.e2e.checked._runs import DUMPS, run_training


@dataclasses.dataclass(frozen=True)
class Mode:
    name: str
    tp_size: int


def _compare(dump_dir: str, mode: Mode) -> None:
    left = sorted(path.parent.name for path in Path(dump_dir).glob("*/metrics.json"))
    assert left == ["baseline", "target"], f"{mode.name}: the runs left {left}"
    compare_metrics(
        f"{dump_dir}/baseline", f"{dump_dir}/target", rtol=0.0, atol=0.0, key_prefixes=["train/"], exclude_keys=[]
    )


def _runner(compare: Callable[[str, Mode], None]) -> Callable[[str], None]:
    def run_ci(name: str) -> None:
        mode = Mode(name, tp_size=2)
        run_training("baseline", tp_size=1)
        run_training("target", tp_size=mode.tp_size)
        compare(DUMPS, mode)

    return run_ci


run_ci = _runner(compare=_compare)
