"""The bisection as data: the retry rule, the order commits are tried in, skips, and the bound."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from runner.bisect.search import Outcome, Rule, Search, Verdict, expected_runs

RULE = Rule()


@pytest.mark.parametrize(
    ("outcomes", "verdict"),
    [
        ([], None),
        (["pass", "pass"], None),
        (["pass", "pass", "pass"], "good"),
        (["fail", "fail"], "bad"),  # two failures decide at once
        (["pass", "fail", "fail"], "bad"),
        (["fail", "pass", "pass"], None),  # one failure: a second round
        (["fail", "pass", "pass", "pass", "pass", "pass"], "good"),  # that failure was noise
        (["fail", "pass", "pass", "fail", "fail", "fail"], "bad"),
        (["fail", "pass", "pass", "pass", "fail"], "flaky"),  # still mixed: flaky, at once
        (["env"], None),  # the environment: tried once more
        (["env", "pass", "pass", "pass"], "good"),  # ... and it counts for neither side
        (["env", "env"], "env"),
        (["pass", "env", "fail", "env"], "env"),
    ],
)
def test_the_retry_rule(outcomes: list[Outcome], verdict: Verdict | None):
    assert RULE.verdict(outcomes) == verdict


def test_one_attempt_a_commit_gets_a_second_after_a_failure():
    rule = Rule(1)
    found = [rule.verdict(["pass"]), rule.verdict(["fail"]), rule.verdict(["fail", "fail"])]
    assert found == ["good", None, "bad"]
    assert rule.verdict(["fail", "pass"]) == "good"  # one attempt cannot be mixed: never flaky


def run(search: Search, outcome_of: dict[int, list[Outcome]] | None = None, first_bad: int = 0) -> Search:
    """The search to its end, each commit's attempts from ``outcome_of`` (else: pass before
    ``first_bad``, fail from it)."""
    given = {i: iter(found) for i, found in (outcome_of or {}).items()}
    for _ in range(1000):
        index = search.next()
        if index is None:
            return search
        default = itertools.repeat("fail" if index >= first_bad else "pass")
        search = search.with_outcome(index, next(given.get(index, default)))
    raise AssertionError("the search did not end")


def commits(count: int) -> tuple[str, ...]:
    return tuple(f"{i:040x}" for i in range(count + 1))


def test_the_ends_first_then_the_middle_and_the_first_bad_commit_is_found():
    search = Search(commits(9))
    assert search.next() == 9  # the bad end
    search = search.with_outcome(9, "fail").with_outcome(9, "fail")
    assert search.next() == 0  # then the good end
    for _ in range(3):
        search = search.with_outcome(0, "pass")
    assert search.next() == 4  # the middle of 0..9, the lower of two
    done = run(search, first_bad=7)
    assert done.first_bad() == 7 and done.unsplit() == ()
    assert done.runs <= expected_runs(RULE, 9) == 18


@pytest.mark.parametrize("count", [1, 2, 3, 7, 8, 100, 1000])
def test_every_first_bad_commit_is_found_within_n_log2_n_plus_2(count: int):
    for first_bad in sorted({1, count, (count + 1) // 2, max(1, count - 1)}):
        done = run(Search(commits(count)), first_bad=first_bad)
        assert done.first_bad() == first_bad
        assert done.runs <= 3 * (math.ceil(math.log2(count)) + 2) if count > 1 else done.runs <= 6


def test_a_skipped_commit_leaves_its_neighbours_to_try():
    given: dict[int, list[Outcome]] = {4: ["env", "env"], 3: ["fail", "pass", "pass", "pass", "fail"]}
    done = run(Search(commits(9)).with_invalid(5), given, first_bad=7)
    assert done.first_bad() == 7
    assert done.skipped() == {3: "flaky", 4: "env", 5: "invalid"}
    assert done.runs <= done.bound()


def test_skips_next_to_the_first_bad_commit_leave_a_range_it_could_not_split():
    given: dict[int, list[Outcome]] = {5: ["env", "env"], 6: ["fail", "pass", "pass", "fail", "pass"]}
    done = run(Search(commits(9)), given, first_bad=7)
    assert done.first_bad() is None
    assert done.unsplit() == (5, 6, 7)  # one of them is the first bad commit
    assert done.next() is None


@pytest.mark.parametrize(
    ("ends", "wrong"),
    [
        ({9: ["pass", "pass", "pass"]}, "the bad commit is good (every attempt passed)"),
        ({0: ["fail", "fail"]}, "the good commit is bad (its attempts failed)"),
        ({9: ["env", "env"]}, "the bad commit is not runnable here (the environment failed twice)"),
    ],
)
def test_ends_that_do_not_behave_as_named_end_it_at_once(ends: dict[int, list[Outcome]], wrong: str):
    done = run(Search(commits(9)), ends, first_bad=1)
    assert done.ends_wrong() == wrong
    assert done.next() is None and done.first_bad() is None and done.unsplit() == ()


def test_flaky_commits_anywhere_never_name_a_wrong_first_bad_commit():
    """Random histories: a first bad commit, flaky good commits (one failure in the first round, at
    least one pass in the second) and commits the environment fails; the answer is the right commit
    or a range that holds it."""
    chance = random.Random(56)
    for _ in range(300):
        count = chance.randint(2, 40)
        first_bad = chance.randint(1, count)
        flaky = {i for i in range(1, first_bad) if chance.random() < 0.15}
        broken = {i for i in range(1, count) if chance.random() < 0.1} - flaky - {first_bad}
        given = {i: _flaky(chance) for i in flaky}
        given.update({i: ["env", "env"] for i in broken})
        done = run(Search(commits(count)), given, first_bad=first_bad)
        found = done.first_bad()
        assert found == first_bad or (found is None and first_bad in done.unsplit()), (count, first_bad)
        assert done.runs <= done.bound()


def _flaky(chance: random.Random) -> list[Outcome]:
    first: list[Outcome] = ["fail", "pass", "pass"]
    second: list[Outcome] = ["pass", *(chance.choice(("pass", "fail")) for _ in range(2))]
    chance.shuffle(first)
    chance.shuffle(second)
    return first + second


def test_a_search_needs_two_commits():
    with pytest.raises(ValueError, match="a good and a bad commit"):
        Search(("a" * 40,))
