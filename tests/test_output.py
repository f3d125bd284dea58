"""runner.cli.output: what reaches the terminal of a report, a checkout's words included, is escaped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runner.cli.output import print_problems, print_validated
from runner.errors import Location, Problem

HOSTILE = "rollout-batch-size\x1b]0;TITLE\x07"
SHOWN = "rollout-batch-size\\x1b]0;TITLE\\x07"


def test_an_overlays_report_and_its_problems_print_a_checkouts_escape_codes_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    problem = Problem("F1", f"unknown flag --{HOSTILE}", "args.x", (Location(Path("a.yaml"), 3),))
    code = print_validated(
        {}, [problem], "text", [f"renamed --{HOSTILE}", "  why: it moved"], [f"TODO {HOSTILE}"]
    )
    assert (code, capsys.readouterr().out) == (
        2,
        f"renamed --{SHOWN}\n  why: it moved\n"
        f"a.yaml:3: error [F1] args.x: unknown flag --{SHOWN}\n"
        f"validated: 1 error, 0 warnings\nTODO {SHOWN}\n",
    )
    print_problems([problem], sys.stderr)
    assert capsys.readouterr().err == f"a.yaml:3: error [F1] args.x: unknown flag --{SHOWN}\n"
