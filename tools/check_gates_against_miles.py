#!/usr/bin/env python3
"""Do run-matrix's bands decide as miles' own metric gate does? A differential check.

Loads the two pure modules of miles' gate from a checkout — ``tests/ci/metric_history/
selection.py`` (which coordinates ``steps`` picks) and ``constraints.py`` (the corridor) — and
compares them with ``runner.results.history.gates`` on generated series, step selections, bands and
baseline means: the same coordinates (step -1 for ``last``), the same errors, the same corridor,
the same verdict. Those two modules import nothing but the standard library; nothing else of the
checkout is run.

  python tools/check_gates_against_miles.py [--miles-root ~/miles] [N]    # default: $MILES_ROOT, 20000
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import random
import sys
from pathlib import Path
from types import ModuleType

from runner.results.history.gates import Reference, SelectionError, coordinates, judge
from runner.results.outcome import Sample
from schemas.run import Expectation


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"miles_gate_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def case(rng: random.Random) -> tuple[list[Sample], object, dict[str, float], float]:
    steps = sorted(rng.sample(range(8), rng.randint(0, 5)))
    if rng.random() < 0.1 and steps:
        steps.append(steps[-1])  # a step printed twice
    values = [rng.choice([rng.uniform(-2, 2), 0.0, 1e-4, math.nan, math.inf]) if rng.random() < 0.1
              else rng.uniform(-2, 2) for _ in steps]  # fmt: skip
    selection = rng.choice(["last", "all", sorted(rng.sample(range(8), rng.randint(1, 3)))])
    band = {
        key: round(rng.uniform(0, 1), 3) for key in ("rel_up", "abs_floor_up", "rel_down", "abs_floor_down")
    }
    for side in ("up", "down"):  # a side may leave one of its two out (0 in miles' normalized dict)
        drop = rng.choice([None, f"rel_{side}", f"abs_floor_{side}"])
        if drop:
            band.pop(drop)
    return (
        [Sample("step", s, v) for s, v in zip(steps, values, strict=True)],
        selection,
        band,
        rng.uniform(-2, 2),
    )


def compare(
    selection_mod: ModuleType, constraints: ModuleType, count: int, seed: int
) -> tuple[int, int, int]:
    rng = random.Random(seed)
    agreed = errors = judged = 0
    for _ in range(count):
        samples, steps, band, ref = case(rng)
        series = [[s.step, s.value] for s in samples]
        try:
            theirs = [(c.step, c.at_step, c.value) for c in selection_mod.select(series, steps)]
        except selection_mod.SelectionError:
            theirs = None
        try:
            ours = coordinates(samples, steps)  # type: ignore[arg-type]
        except SelectionError:
            ours = None
        assert (theirs is None) == (ours is None), (series, steps, theirs, ours)
        if ours is None or theirs is None:
            errors += 1
            agreed += 1
            continue
        assert ours == theirs, (series, steps, theirs, ours)
        normalized = {key: band.get(key, 0.0) for key in constraints.CONSTRAINT_SCHEMA}
        expectation = Expectation.model_validate({"band": band, "steps": steps})
        baseline = {("m", step): Reference(ref, 3) for step, _, _ in ours}
        for gate, (_, _, value) in zip(judge("m", expectation, samples, baseline), ours, strict=True):
            outcome = constraints.evaluate_constraint(normalized, value, ref)
            assert (gate.verdict == "pass") == outcome.ok, (value, ref, band, gate, outcome)
            assert math.isclose(gate.low or 0, outcome.lo) and math.isclose(gate.high or 0, outcome.hi)
            judged += 1
        agreed += 1
    return agreed, errors, judged


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("count", nargs="?", type=int, default=20_000)
    parser.add_argument("--miles-root", type=Path, default=os.environ.get("MILES_ROOT"))
    args = parser.parse_args()
    if args.miles_root is None:
        parser.error("give --miles-root (or set MILES_ROOT)")
    folder = args.miles_root / "tests" / "ci" / "metric_history"
    selection_mod, constraints = load(folder / "selection.py"), load(folder / "constraints.py")
    agreed, errors, judged = compare(selection_mod, constraints, args.count, seed=20261130)
    print(f"{agreed}/{args.count} cases agree with {folder}: {errors} selection errors on both sides, "
          f"{judged} coordinates judged alike (corridor and verdict)")  # fmt: skip


if __name__ == "__main__":
    main()
