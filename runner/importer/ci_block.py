"""ci_block: the test's CI registrations into the plan — the ``ci:`` block, the metric gates as
``expect:`` entries, and the skip of a side miles' CI disables.

With one side, the spec holds that side's (with a base, what differs from the base's). With two, the
spec holds the default (CUDA) side's and the other side's component what its registration changes;
a disabled side is a skip of that side's cells only.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from runner.importer import plan, platforms, registrations
from runner.importer.residual import data_residual
from runner.importer.sides import Recorded
from runner.importer.variants import Variants
from runner.spec.load import DELETE


def default_side(
    draft: plan.ImportPlan,
    variants: Variants,
    base: dict[str, Any],
    recorded: Recorded,
    platform: str,
    script: Path,
    today: datetime.date,
) -> None:
    """The default side's ci: block, gates and skip (with a base: what differs from the base's)."""
    others = frozenset(side.platform for side in recorded.sides[1:]) | recorded.dropped
    found = registrations.spec_data(variants.registrations, platform, script, today, others)
    variants.notes.extend(note for note in found.notes if note not in variants.notes)
    ci = {k: v for k, v in found.ci.items() if (base.get("ci") or {}).get(k) != v}
    ci |= {k: DELETE for k in base.get("ci") or {} if k not in found.ci}
    expect: dict[str, Any] = {m: e for m, e in found.expect.items() if (base.get("expect") or {}).get(m) != e}
    expect |= {m: DELETE for m in base.get("expect") or {} if m not in found.expect}
    draft.spec |= {"ci": ci} if ci else {}
    draft.spec |= {"expect": expect} if expect else {}
    base_skip = ((base.get("matrix") or {}).get("adjust") or {}).get(plan.SKIP_ENTRY)
    if len(recorded.sides) > 1 and found.skip is not None:  # this side's cells only
        draft.skips[f"{plan.SKIP_ENTRY}-{platform}"] = ({platforms.AXIS: platform}, found.skip)
    elif found.skip is not None and (base_skip or {}).get("skip") != found.skip:
        draft.skip = found.skip
    elif found.skip is None and base_skip is not None:
        draft.skip = DELETE


def other_side(
    draft: plan.ImportPlan, variants: Variants, recorded: Recorded, script: Path, today: datetime.date
) -> None:
    """The second side's ci: block, as its component's change of the default side's, and its skip."""
    default, other = recorded.sides
    regs = variants.registrations
    mine = registrations.spec_data(regs, default.platform, script, today, frozenset({other.platform}))
    theirs = registrations.spec_data(regs, other.platform, script, today, frozenset({default.platform}))
    variants.notes.extend(note for note in theirs.notes if note not in variants.notes)
    defaults = variants.cells[0][0]
    edit = {"ci": data_residual(mine.ci, theirs.ci)}
    draft.add({**defaults, platforms.AXIS: other.platform}, defaults, edit)
    if theirs.skip is not None:
        draft.skips[f"{plan.SKIP_ENTRY}-{other.platform}"] = ({platforms.AXIS: other.platform}, theirs.skip)
