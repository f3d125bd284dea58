"""The results site's facts, pure: failure kinds, streaks, the flip rate, parity shares, the budget."""

from __future__ import annotations

import datetime

from runner.results.coverage import Entry, Row
from runner.results.site import budget, facts, parity
from runner.results.site.records import Run

DAY = datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc)


def run(index: int, status: str = "passed", outcome: str = "succeeded", cell: str = "nv/a", **more) -> Run:
    fields = {"content_hash": "h1", "hardware": "h200", "seconds": 3600.0, **more}
    return Run(
        index, f"r{index}", DAY + datetime.timedelta(days=index), cell, fields["content_hash"], fields["hardware"],
        "c0ffee", 1, outcome, status, status == "passed", "", fields["seconds"],
    )  # fmt: skip


def runs(*said: str, **more) -> list[Run]:
    """``P`` passed, ``G`` a gate failure, ``J`` a job failure, ``I`` infra, ``T`` a timeout, ``S`` skipped."""
    shapes = {"P": ("passed", "succeeded"), "G": ("failed", "succeeded"), "J": ("failed", "failed"),
              "I": ("error", "infra"), "T": ("failed", "timeout"), "S": ("skipped", "not-submitted")}  # fmt: skip
    return [run(i, *shapes[letter], **more) for i, letter in enumerate("".join(said))]


def test_each_failure_is_told_by_its_cause():
    kinds = [facts.kind(r) for r in runs("PGJITS")]
    assert kinds == ["passed", "gate", "job", "infra", "infra", "infra"]
    assert facts.kind(run(0, "interrupted", "interrupted")) == "none"
    assert facts.kind(run(0, "failed", "not-submitted")) == "infra"  # a prepare step failed: never submitted


def test_the_current_streak_counts_the_newest_failures_and_says_since_when():
    streak = facts.streak(runs("PPGIG"))
    assert (streak.runs, streak.since, streak.kinds) == (
        3,
        DAY + datetime.timedelta(days=2),
        (("gate", 2), ("infra", 1)),
    )
    assert streak.describe() == "3 runs since 2026-12-03 02:00 (2 gate failures, 1 infra failure)"
    assert facts.streak(runs("GGP")).describe() == "none"
    assert facts.streak([]).runs == 0


def test_three_flips_in_the_last_ten_runs_make_a_cell_flaky():
    steady = facts.flips(runs("PPPPPPPPGG"))
    assert (steady.flips, steady.verdicts, steady.flaky) == (1, 10, False)
    flaky = facts.flips(runs("PPPPPPGPGP"))
    assert (flaky.flips, flaky.flaky, flaky.describe()) == (4, True, "4 flips in the last 10 runs")
    assert round(flaky.rate, 3) == round(4 / 9, 3)
    assert (
        facts.flips(runs("PGPGPGPGPG"), window=10, threshold=10).flaky is False
    )  # the threshold is an option
    assert facts.flips(runs("GPG", "PPPPPPPPPP")).flips == 0  # only the last 10 runs count


def test_infra_failures_flip_nothing_and_another_content_hash_is_another_window():
    assert facts.flips(runs("PIPIPIPTPP")).flips == 0
    older = runs("PGPGPG", content_hash="old")
    newer = [run(10 + i, r.status, r.outcome, content_hash="new") for i, r in enumerate(runs("PPPP"))]
    found = facts.flips(older + newer)
    assert (found.flips, found.verdicts, found.content_hash) == (0, 4, "new")
    assert facts.flips([]).describe() == "too few runs with a verdict"


def row(test: str, **statuses: tuple[str, list[str]]) -> Row:
    return Row(test, "", {h: Entry(status, cells) for h, (status, cells) in statuses.items()})


VENDORS = {"h200": "nvidia", "b200": "nvidia", "mi355x": "amd"}


def test_parity_shares_per_hardware_and_vendor_and_split_tests_first():
    rows = [
        row("a", h200=("runs", ["nv/a"]), mi355x=("runs", ["rocm/a"])),
        row("b", h200=("runs", ["nv/b"]), mi355x=("skipped", ["rocm/b"])),
        row("c", b200=("runs", ["nv/c"]), mi355x=("unchecked", ["rocm/c"])),
        row("d", mi355x=("missing", [])),
    ]
    latest = [
        run(1, cell="nv/a"),
        run(2, "failed", cell="rocm/a"),
        run(3, cell="nv/c"),
        run(4, "error", "infra", cell="rocm/c"),
    ]
    found = parity.parity(rows, VENDORS, latest, [])
    assert [(s.name, s.running, s.tests, round(s.percent)) for s in found.vendors] == [
        ("amd", 2, 4, 50),
        ("nvidia", 3, 4, 75),
    ]
    assert [(s.name, s.running) for s in found.hardware] == [("h200", 2), ("b200", 1), ("mi355x", 2)]
    assert [r.test for r in found.rows] == ["a", "b", "c", "d"]  # c's AMD side failed for infra: not split
    assert found.split == {("a", "")}
    reordered = parity.parity(rows[::-1], VENDORS, latest, [])
    assert reordered.rows[0].test == "a"


def test_an_expired_skip_is_one_whose_date_has_passed():
    today = datetime.date(2026, 12, 7)
    assert parity.expired(datetime.date(2026, 12, 6), today) and not parity.expired(today, today)
    assert not parity.expired(None, today)


def test_gpu_hours_per_week_suite_and_hardware_against_a_weekly_budget():
    found = runs("PPPPPPPPP")  # one a day from Tuesday 2026-12-01: weeks 49 and 50
    gpus, suites = {"nv/a": 8}, {"nv/a": "stage-c-8-gpu-h200"}
    spent = budget.budget([*found, run(20, cell="gone/x")], gpus, suites, limit=40.0)
    assert [(s.week, s.suite, s.hardware, s.runs, s.gpu_hours) for s in spent.spent] == [
        ("2026-W49", "stage-c-8-gpu-h200", "h200", 6, 48.0),
        ("2026-W50", "stage-c-8-gpu-h200", "h200", 3, 24.0),
    ]
    assert (spent.weeks, spent.over(), spent.unknown) == (
        (("2026-W49", 48.0), ("2026-W50", 24.0)),
        ["2026-W49"],
        1,
    )
    assert budget.budget(found, gpus, {}, None).spent[0].suite == budget.NO_SUITE
    assert budget.budget([run(1, seconds=None)], gpus, suites, None).spent == ()
