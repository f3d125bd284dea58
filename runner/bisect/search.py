"""search: the bisection itself, as data — which commit to try next, what its attempts say, when it ends.

Pure: outcomes in, the next commit or the answer out. ``commits`` is the first-parent history from
the good commit (index 0) to the bad one (the last index), oldest first. Both ends are tried first
(the bad end, then the good one), so that a range whose ends do not behave as named is said at once
instead of bisected into nonsense. Then, as ``git bisect`` does, the commit nearest the middle of
the range still open (after the last good commit, up to the first bad one) that has no verdict;
a commit skipped (flaky, invalid there, the environment) leaves its neighbours to try.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["pass", "fail", "env"]  # one attempt: the cell passed, failed, or could not run
Verdict = Literal["good", "bad", "flaky", "env", "invalid"]  # a commit's; the last three are skips
SKIPS: tuple[Verdict, ...] = ("flaky", "env", "invalid")
DEFAULT_ATTEMPTS = 3


@dataclass(frozen=True)
class Rule:
    """How attempts decide a commit. A first round of ``attempts``: all pass is good, two failures are
    bad (at once: the rest cannot make it good). Exactly one failure earns a second round of as many:
    all pass is good (that failure was noise), all fail is bad, a mix is flaky. An attempt the
    environment spoiled counts for neither side: the commit is tried once more, and a second such
    attempt skips it."""

    attempts: int = DEFAULT_ATTEMPTS

    def verdict(self, outcomes: Sequence[Outcome]) -> Verdict | None:
        """The commit's verdict from its outcomes so far, or None: it needs another attempt."""
        if list(outcomes).count("env") >= 2:
            return "env"
        judged = [o for o in outcomes if o != "env"]
        first, second = judged[: self.attempts], judged[self.attempts :]
        if first.count("fail") >= 2:
            return "bad"
        if len(first) < self.attempts:
            return None
        if "fail" not in first:
            return "good"
        if "pass" in second and "fail" in second:
            return "flaky"
        if len(second) < self.attempts:
            return None
        return "good" if "fail" not in second else "bad"

    @property
    def most(self) -> int:
        """The most attempts one commit can take: two rounds and one attempt the environment spoiled."""
        return 2 * self.attempts + 1


def expected_runs(rule: Rule, count: int) -> int:
    """n·(⌈log2 N⌉ + 2) for ``count`` commits after the good one: a round at each end, and one at
    each halving. Skips, and second rounds, add to it (``Search.bound``)."""
    return rule.attempts * (math.ceil(math.log2(count)) + 2) if count > 1 else rule.attempts * 2


@dataclass(frozen=True)
class Search:
    """The state of a bisection: the commits, and every attempt's outcome by commit index."""

    commits: tuple[str, ...]
    rule: Rule = field(default_factory=Rule)
    outcomes: Mapping[int, tuple[Outcome, ...]] = field(default_factory=dict)
    invalid: frozenset[int] = frozenset()  # commits where the spec does not validate (no attempt)

    def __post_init__(self) -> None:
        if len(self.commits) < 2:
            raise ValueError("a bisection needs a good and a bad commit")

    def with_outcome(self, index: int, outcome: Outcome) -> Search:
        outcomes = dict(self.outcomes)
        outcomes[index] = (*outcomes.get(index, ()), outcome)
        return Search(self.commits, self.rule, outcomes, self.invalid)

    def with_invalid(self, index: int) -> Search:
        return Search(self.commits, self.rule, self.outcomes, self.invalid | {index})

    def verdict(self, index: int) -> Verdict | None:
        if index in self.invalid:
            return "invalid"
        return self.rule.verdict(self.outcomes.get(index, ()))

    @property
    def runs(self) -> int:
        return sum(len(each) for each in self.outcomes.values())

    @property
    def last(self) -> int:
        return len(self.commits) - 1

    def wrong_end(self) -> tuple[str, Verdict] | None:
        """An end that did not behave as named: how it was named (good, bad) and its verdict."""
        for index, named in ((self.last, "bad"), (0, "good")):
            found = self.verdict(index)
            if found is not None and found != named:
                return named, found
        return None

    def ends_wrong(self) -> str:
        """Why the range cannot be bisected ("" while it can), in words."""
        wrong = self.wrong_end()
        return f"the {wrong[0]} commit is {_described(wrong[1])}" if wrong else ""

    def range(self) -> tuple[int, int]:
        """The open range ``(lo, hi)``: the newest good commit, and the oldest bad one after it."""
        lo = max((i for i in range(len(self.commits)) if self.verdict(i) == "good"), default=0)
        hi = min((i for i in range(lo + 1, len(self.commits)) if self.verdict(i) == "bad"), default=self.last)
        return lo, hi

    def next(self) -> int | None:
        """The commit to attempt next, or None when the bisection has ended."""
        if self.ends_wrong():
            return None
        for index in (self.last, 0):
            if self.verdict(index) is None:
                return index
        lo, hi = self.range()
        open_ = [i for i in range(lo + 1, hi) if self.verdict(i) is None]
        middle = (lo + hi) / 2
        return min(open_, key=lambda i: (abs(i - middle), i)) if open_ else None

    def first_bad(self) -> int | None:
        """The first bad commit, once the range is split to one commit; None while it is not."""
        if self.next() is not None or self.ends_wrong():
            return None
        lo, hi = self.range()
        return hi if hi - lo == 1 else None

    def unsplit(self) -> tuple[int, ...]:
        """When the bisection ended on skipped commits: the commits one of which is the first bad one."""
        if self.next() is not None or self.ends_wrong() or self.first_bad() is not None:
            return ()
        lo, hi = self.range()
        return tuple(range(lo + 1, hi + 1))

    def skipped(self) -> dict[int, Verdict]:
        return {i: v for i in range(len(self.commits)) if (v := self.verdict(i)) in SKIPS}

    def bound(self) -> int:
        """The most runs this bisection may take: n·(⌈log2 N⌉ + 2), plus each skipped commit's own runs
        and one more round for the neighbour tried in its place, plus each second round and retry."""
        rounds = expected_runs(self.rule, self.last)
        skipped = self.skipped()
        extra = sum(len(self.outcomes.get(i, ())) + self.rule.attempts for i in skipped)
        extra += sum(
            max(0, len(found) - self.rule.attempts) for i, found in self.outcomes.items() if i not in skipped
        )
        return rounds + extra


def _described(verdict: Verdict) -> str:
    return {
        "good": "good (every attempt passed)",
        "bad": "bad (its attempts failed)",
        "flaky": "flaky (its attempts disagree)",
        "env": "not runnable here (the environment failed twice)",
        "invalid": "one where the spec does not validate",
    }[verdict]
