"""miles' metric lines -> time series -> checks against the spec's ``expect:``. Pure.

miles logs ``[time] log_utils.py:453 - step 0: {'train/ppo_kl': 0.0, ...}``, usually behind
a Ray prefix (``(MegatronTrainRayActor pid=1234) ``). The payload is a Python dict literal,
read with ``ast.literal_eval`` only; ``nan`` and ``inf`` (which literal_eval does not know)
are read as values. A critic's ``critic-step N`` metrics are named ``critic-step:<key>``.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping

from runner.results.outcome import Check, Sample
from schemas.run import Expectation

_LINE = re.compile(r"\b(critic-step|step|rollout|perf) (\d+): (\{.*\})\s*$")
_SPECIAL = re.compile(r"(:\s*)(-?)(nan|inf)\b(?=\s*[,}])")

Series = dict[str, list[Sample]]


def parse_line(line: str) -> list[tuple[str, Sample]]:
    """The (metric name, sample) pairs of one log line; none when it is not a metric line."""
    match = _LINE.search(line)
    if not match:
        return []
    kind, step, payload = match.group(1), int(match.group(2)), match.group(3)
    try:
        data = ast.literal_eval(_SPECIAL.sub(_special, payload))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    prefix = "critic-step:" if kind == "critic-step" else ""
    return [
        (prefix + key, Sample(kind, step, math.nan if value is None else float(value)))
        for key, value in data.items()
        if isinstance(key, str) and _is_number(value)
    ]


def _special(match: re.Match[str]) -> str:
    # inf -> 1e999 (a literal that overflows to inf); nan -> None, read back as nan
    if match.group(3) == "inf":
        return f"{match.group(1)}{match.group(2)}1e999"
    return f"{match.group(1)}None"


def _is_number(value: object) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def collect(lines: Iterable[str]) -> Series:
    series: Series = {}
    for line in lines:
        add(series, line)
    return series


def add(series: Series, line: str) -> list[tuple[str, Sample]]:
    found = parse_line(line)
    for name, sample in found:
        series.setdefault(name, []).append(sample)
    return found


def check(expect: Mapping[str, Expectation], series: Mapping[str, list[Sample]]) -> tuple[Check, ...]:
    """The fixed bounds (``min``/``max``); bands are judged against history (``runner.results.history``)."""
    return tuple(
        check_one(name, bound, series.get(name, [])) for name, bound in expect.items() if bound.bounded
    )


def check_one(name: str, bound: Expectation, samples: list[Sample]) -> Check:
    wanted = bound.describe()
    if not samples:
        return Check(name, wanted, False, f"{name} was never printed (expected {wanted})")
    selection = bound.selection
    if isinstance(selection, list):
        chosen = [next(s for s in reversed(samples) if s.step == k) for k in selection if _has(samples, k)]
        missing = [k for k in selection if not _has(samples, k)]
        if missing:
            seen = ", ".join(str(s) for s in sorted({s.step for s in samples}))
            where = f"step {missing[0]}" if len(missing) == 1 else f"steps {', '.join(map(str, missing))}"
            return Check(name, wanted, False, f"{name} has no value at {where} (steps: {seen})")
    else:
        chosen = samples[-1:] if selection == "last" else samples
    broken = [s for s in chosen if not _within(s.value, bound)]
    if not broken:
        values = ", ".join(f"{s.value:g}" for s in chosen[:8]) + (", ..." if len(chosen) > 8 else "")
        return Check(name, wanted, True, f"{name}: {values} (expected {wanted})")
    first = broken[0]
    more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
    return Check(
        name, wanted, False, f"{name} is {first.value:g} at step {first.step}{more}; expected {wanted}"
    )


def _has(samples: list[Sample], step: int) -> bool:
    return any(s.step == step for s in samples)


def _within(value: float, bound: Expectation) -> bool:
    if math.isnan(value):
        return False
    return (bound.min is None or value >= bound.min) and (bound.max is None or value <= bound.max)
