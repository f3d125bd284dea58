"""A comparison of two runs' metrics, with the signature of miles' own (written for run-matrix's
tests): each folder holds ``metrics.json`` ({"name": value}); the keys under ``key_prefixes`` must
agree within ``rtol``/``atol``."""

from __future__ import annotations

import json
import math
from pathlib import Path


def compare_metrics(
    baseline_dir: str,
    target_dir: str,
    *,
    rtol: float,
    atol: float,
    key_prefixes: list[str],
    exclude_keys: list[str],
) -> None:
    baseline, target = (json.loads((Path(d) / "metrics.json").read_text()) for d in (baseline_dir, target_dir))
    keys = [k for k in baseline if k.startswith(tuple(key_prefixes)) and k not in exclude_keys]
    differ = [k for k in keys if not math.isclose(baseline[k], target.get(k, math.nan), rel_tol=rtol, abs_tol=atol)]
    assert not differ, f"metrics differ: {', '.join(differ)}"
