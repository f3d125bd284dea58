"""A catalog for a miles checkout: its own flags, read statically, over a shipped catalog's
Megatron and SGLang flags (the checkout does not hold those programs)."""

from __future__ import annotations

from pathlib import Path

from runner.errors import EnvironmentProblem
from runner.knowledge.flags.catalog import Catalog
from runner.knowledge.flags.sync import Report, combined, miles_flags


def catalog_of_checkout(root: Path, base: Catalog) -> Catalog:
    report = Report()
    try:
        own = list(miles_flags(root, report))
    except (OSError, SyntaxError, UnicodeDecodeError, RecursionError) as exc:
        raise EnvironmentProblem(f"cannot read the flags of {root}: {exc}") from None
    megatron = [f for f in base.flags if f.program == "megatron"]
    rest = [f for f in base.flags if f.program not in ("miles", "megatron", "fsdp")]
    flags = combined(megatron, own, rest)
    sources = {**base.sources, "miles": f"the checkout at {root}"}
    return Catalog(
        str(root), base.date, sources, flags, origin=f"checkout {root}", skipped=tuple(report.misnamed)
    )
