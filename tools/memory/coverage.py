#!/usr/bin/env python3
"""How much of a suite the memory estimate covers: each cell fully estimated, partly (a term it cannot
size, e.g. LoRA's adapters), or not at all (no model shape, a backend not modelled), the reasons for
partly and not grouped and counted.

  python tools/memory/coverage.py SPEC|DIR ... [--miles-root DIR] [--cells]

Cells whose model has a preset (``model.type``: shipped under ``miles/models/`` or the checkout's
``scripts/models/``) are counted apart: each of them should be fully estimated, and each that is not
is listed with its reason. ``--cells``: a line per cell too. Exit 1 when a cell with a preset is not
fully estimated.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from runner import pipeline
from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.errors import SpecError
from runner.memory.estimate import Estimate, estimate


def reasons(found: Estimate) -> list[str]:
    """Why a cell is not fully estimated: the estimate's own reason, or each unknown term's."""
    if found.why_not:
        return [found.why_not]
    if not found.phases:
        return ["no phase"]
    said = {f"{t.holder} {t.name}: {t.why_not}" for p in found.phases for t in p.unknown}
    return sorted(said)


def census(cells: list[Cell]) -> tuple[list[str], bool]:
    """The figures in lines, and whether every cell with a preset is fully estimated."""
    levels: collections.Counter[str] = collections.Counter()
    why: dict[str, collections.Counter[str]] = {level: collections.Counter() for level in ("partly", "none")}
    short: list[str] = []
    for cell in cells:
        found = estimate(cell, layout(cell))
        levels[found.level] += 1
        if found.level == "full":
            continue
        for reason in reasons(found):
            why[found.level][reason] += 1
        if cell.spec.model.type:
            short.append(f"  {cell.id} ({cell.spec.model.type}): {found.level}: {'; '.join(reasons(found))}")
    lines = [
        f"{len(cells)} cells: {levels['full']} fully estimated, {levels['partly']} partly,"
        f" {levels['none']} not estimated"
    ]
    for level, title in (("partly", "partly estimated"), ("none", "not estimated")):
        if why[level]:
            lines.append(f"{title}, by reason (a cell may have several):")
            lines += [f"  {count:4d}  {reason}" for reason, count in why[level].most_common()]
    with_preset = sum(1 for c in cells if c.spec.model.type)
    lines.append(
        f"{with_preset} cells name a model preset; {with_preset - len(short)} of them fully estimated"
    )
    return lines + short, not short


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--miles-root", type=Path)
    parser.add_argument("--cells", action="store_true", help="a line per cell")
    args = parser.parse_args()
    broken: list[tuple[Path, SpecError]] = []
    cells = pipeline.select(args.specs, broken=broken, miles_root=args.miles_root)
    if args.cells:
        for cell in cells:
            found = estimate(cell, layout(cell))
            said = "; ".join(reasons(found)) if found.level != "full" else "ok"
            print(f"{found.level:<6} {cell.id}: {said}")
    lines, complete = census(cells)
    print("\n".join(lines))
    if broken:
        print(f"{len(broken)} specs did not expand (not counted): {', '.join(str(p) for p, _ in broken[:5])}")
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
