"""A band recommended from the trusted runs of one metric, with the statistics it came from. Pure.

Noise model: at each coordinate (a step, or the last value) the runs of one identity (cell, content
hash, hardware, stack) are independent draws of one normal distribution N(mu_k, sigma_k). A gate
compares the next run with the mean of n baseline runs, so the next run's deviation from that mean
is N(0, sigma_k * sqrt(1 + 1/n)); with sigma_k estimated by the sample standard deviation s_k the
deviation over ``s_k * sqrt(1 + 1/n)`` is Student's t with n - 1 degrees of freedom. The band is the
two-sided **prediction interval for the next run**: ``h_k = t(rate_k, n - 1) * s_k * sqrt(1 + 1/n)``.
The false-failure rate ``rate`` is for the whole run: over K gated coordinates each gets ``rate / K``
(Bonferroni), so a healthy run fails at most ``rate`` of the time.

Megatron-LM's rule of thumb (``--recommend-tolerances``: the largest observed variation times 1.5)
is computed on the same runs, with the false-failure rate it implies under the same model.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runner.errors import counted
from runner.results.history import student

FIRM = 1.1  # firm: the t-interval is within 10% of the one an infinite history would give


@dataclass(frozen=True)
class Recommendation:
    metric: str
    runs: int  # trusted runs with a finite value at every coordinate
    coordinates: int
    rate: float  # the false-failure rate asked for, per run
    band: dict[str, float] = field(default_factory=dict)  # miles' four keys; {} when none
    mean: float = math.nan  # of the first coordinate (the last value for steps: last)
    spread: float = math.nan  # its sample standard deviation
    implied_rate: float = math.nan  # of ``band``, per run, under the model
    megatron: dict[str, float] = field(default_factory=dict)  # its band, same form
    megatron_rate: float = math.nan  # per run, under the model
    more_runs: int = 0  # to firm the interval up
    problem: str = ""  # why there is no band

    def why(self) -> str:
        """The figures a band came from, in one sentence (what a ``why:`` beside it should say)."""
        return (
            f"history recommend: {self.runs} trusted runs, mean {self.mean:.6g}, "
            f"spread (sd) {self.spread:.3g}; "
            f"{1 - self.rate:.0%} prediction interval for the next run (Student t, {self.runs - 1} df, "
            f"Bonferroni over {counted(self.coordinates, 'coordinate')}): "
            f"a healthy run fails {_percent(self.implied_rate)} of the time "
            f"(Megatron's 1.5x largest variation: {_percent(self.megatron_rate)})"
            + (f"; {self.more_runs} more runs would firm it up" if self.more_runs else "")
        )

    def to_json(self) -> dict[str, object]:
        data = dict(self.__dict__)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in data.items()}


def recommend(metric: str, values: Mapping[int, Sequence[float]], rate: float = 0.01) -> Recommendation:
    """The band for ``values`` (coordinate step -> one value per trusted run, finite ones only)."""
    chosen = {step: [v for v in found if math.isfinite(v)] for step, found in values.items()}
    runs = min((len(found) for found in chosen.values()), default=0)
    empty = Recommendation(metric, runs, len(chosen), rate)
    if runs < 2:
        have = "no trusted run" if runs == 0 else "1 trusted run"
        problem = f"{have} with a finite value on this hardware and stack; a spread needs 2 (3 or more)"
        return _with(empty, problem=problem)
    per_step = rate / len(chosen)
    factor = student.quantile(per_step, runs - 1) * math.sqrt(1 + 1 / runs)
    stats = {
        step: (statistics.fmean(found), statistics.stdev(found), found) for step, found in chosen.items()
    }
    widths = {step: factor * sd for step, (_, sd, _) in stats.items()}
    band = _band({step: m for step, (m, _, _) in stats.items()}, widths)
    largest = {step: 1.5 * max(abs(v - m) for v in found) for step, (m, _, found) in stats.items()}
    megatron = _band({step: m for step, (m, _, _) in stats.items()}, largest, round_up=False)
    first = next(iter(stats.values()))
    return _with(
        empty,
        band=band,
        mean=first[0],
        spread=first[1],
        implied_rate=implied_rate(band, stats, runs),
        megatron=megatron,
        megatron_rate=implied_rate(megatron, stats, runs),
        more_runs=max(0, firm_runs(per_step) - runs),
    )


def _with(base: Recommendation, **changes: object) -> Recommendation:
    return Recommendation(**{**base.__dict__, **changes})


def _band(means: Mapping[int, float], widths: Mapping[int, float], round_up: bool = True) -> dict[str, float]:
    """miles' form covering ``widths`` at every coordinate: ``rel`` the median of width / |mean|,
    ``abs_floor`` what the coordinates it leaves short need (a mean near 0, a wide step)."""
    ratios = sorted(widths[k] / abs(m) for k, m in means.items() if m != 0)
    rel = ratios[len(ratios) // 2] if ratios else 0.0
    short = [widths[k] for k, m in means.items() if rel * abs(m) < widths[k]]
    floor = max(short, default=0.0)
    if rel == 0 and floor == 0:  # every run printed the same: as tight as the numbers' own precision
        floor = max([abs(m) * 1e-9 for m in means.values()] + [1e-12])
    if round_up:
        rel, floor = _up(rel), _up(floor)
    return {"rel_up": rel, "abs_floor_up": floor, "rel_down": rel, "abs_floor_down": floor}


def _up(value: float, digits: int = 2) -> float:
    """``value`` rounded up to ``digits`` significant digits (a band is never narrower than asked)."""
    if value <= 0:
        return 0.0
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return float(f"{math.ceil(value / scale - 1e-9) * scale:.{digits}g}")


def implied_rate(
    band: Mapping[str, float], stats: Mapping[int, tuple[float, float, Sequence[float]]], runs: int
) -> float:
    """The chance a healthy run leaves ``band`` at some coordinate, under the module's model."""
    scale = math.sqrt(1 + 1 / runs)
    passing = 1.0
    for mean, sd, _ in stats.values():
        width = max(band["rel_up"] * abs(mean), band["abs_floor_up"])
        if sd == 0:
            continue  # a coordinate that never moved is not expected to
        passing *= 1 - student.two_sided_tail(width / (sd * scale), runs - 1)
    return 1 - passing


def firm_runs(per_step: float) -> int:
    """The fewest runs whose prediction interval is within ``FIRM`` of the limit (known sigma)."""
    limit = student.quantile(per_step, 100_000)
    for runs in range(2, 1000):
        if student.quantile(per_step, runs - 1) * math.sqrt(1 + 1 / runs) <= FIRM * limit:
            return runs
    return 1000


def _percent(rate: float) -> str:
    if not math.isfinite(rate):
        return "an unknown share"
    return f"{rate:.2%}" if rate >= 0.0001 else f"{rate:.1e}"
