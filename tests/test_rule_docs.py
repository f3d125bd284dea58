"""The rule table the documentation generates: every rule id says what it checks and its source."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from runner import check
from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import OUTSIDE_REGISTRY, RULES, RuleDoc, described, documented, rule_doc
from runner.errors import Problem

ROOT = Path(__file__).parents[1]


def undocumented(rows: Sequence[RuleDoc]) -> list[str]:
    """Each row the table could not show: one without what it checks, or without its source."""
    return [f"{row.id} ({row.module}): no {part}" for row in rows for part in _missing(row)]


def _missing(row: RuleDoc) -> list[str]:
    return [part for part, text in (("checks", row.checks), ("Source", row.source)) if not text.strip()]


def test_every_rule_says_what_it_checks_and_its_source():
    assert undocumented(documented()) == []


def test_the_table_has_every_id_once():
    ids = [row.id for row in documented()]
    outside = {row.id for row in OUTSIDE_REGISTRY}
    assert len(ids) == len(set(ids))
    assert set(ids) == set(RULES) | outside
    assert not outside & set(RULES)  # a rule is raised in one place


def test_the_table_is_in_family_order_then_by_number():
    ids = [row.id for row in documented()]
    assert [i[0] for i in ids] == sorted((i[0] for i in ids), key="FGLSMP".index)
    assert ids.index("F0") == 0 and ids.index("G9") < ids.index("G10") < ids.index("G14")
    assert ids.index("P7") < ids.index("P10")


def test_a_row_says_where_the_rule_runs_and_whether_only_strict_does():
    rows = {row.id: row for row in documented()}
    assert (rows["M3"].module, rows["M3"].strict) == ("runner.check.megatron", False)
    assert rows["M12"].module == "runner.check.choices"  # a generated "one of" rule
    assert rows["L6"].module == "runner.check.miles"  # a generated "requires" rule
    assert rows["G16"].strict
    assert rows["G14"].module == "runner.spec.repository"


def test_a_docstring_reads_as_one_line_of_checks_and_one_of_source():
    def wrapped(cell: Cell, _: Layout) -> Iterator[Problem]:
        """A first paragraph that a line break
        splits.

        A note for readers of the code, not for the table.

        Source: Megatron-LM megatron/training/arguments.py,
        validate_args
        """
        yield from ()

    row = rule_doc("M99", wrapped)
    assert (row.checks, row.source) == (
        "A first paragraph that a line break splits.",
        "Megatron-LM megatron/training/arguments.py, validate_args",
    )


def test_a_rule_without_a_docstring_or_a_source_is_caught():
    def bare(cell: Cell, _: Layout) -> Iterator[Problem]:
        yield from ()

    def sourceless(cell: Cell, _: Layout) -> Iterator[Problem]:
        """What it checks, and nothing about where that comes from."""
        yield from ()

    def source_only(cell: Cell, _: Layout) -> Iterator[Problem]:
        """Source: run-matrix spec hygiene"""
        yield from ()

    rows = [rule_doc("G97", bare), rule_doc("G98", sourceless), rule_doc("G99", source_only)]
    module = __name__
    assert undocumented(rows) == [
        f"G97 ({module}): no checks",
        f"G97 ({module}): no Source",
        f"G98 ({module}): no Source",
        f"G99 ({module}): no checks",
    ]


def test_a_registered_rule_without_a_docstring_fails_the_table(monkeypatch: pytest.MonkeyPatch):
    def bare(cell: Cell, _: Layout) -> Iterator[Problem]:
        yield from ()

    monkeypatch.setitem(check.RULES, "S99", bare)
    assert undocumented(documented()) == [f"S99 ({__name__}): no checks", f"S99 ({__name__}): no Source"]


def test_a_generated_rule_reads_back_what_its_table_says():
    entry = check.choices.ONE_OF["P2"]
    row = rule_doc("P2", RULES["P2"])
    assert (row.checks, row.source) == (entry.checks, entry.source)
    assert RULES["P2"].__doc__ == described(entry.checks, entry.source)


@pytest.mark.allow_subprocess  # a fresh interpreter: the generator imports runner.check alone
def test_a_caller_that_imports_only_runner_check_gets_every_rule():
    code = "from runner.check import documented; print(' '.join(row.id for row in documented()))"
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.split() == [row.id for row in documented()]
