"""run-matrix import of a run named by the clock (miles' ``create_run_id()``): in the sandbox it returns
a stand-in that the launch's flags hold as ``$${run-id}`` (named anew per attempt by run), with a note;
anywhere else, or changed, it is refused at the script's line. The checkout is ``fake-miles`` with
``own-checks`` laid over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import pipeline
from runner.launch.render import render
from tests.test_importer_own_calls import OWN, imported, own_checks_checkout
from tests.test_importer_own_calls import refusal as refused

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

SPEC_ONLY = (
    "a spec names a run only in a launch's flags ($${run-id}, made anew for each attempt when the job is"
    " submitted); nothing else of the spec can take it"
)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return own_checks_checkout(tmp_path)


def test_a_run_named_by_the_clock_is_run_id_in_the_flags_with_a_note(checkout):
    data, text = imported(checkout, "test_run_named.py")
    flags = data["args"]["misc"]
    assert (flags["load"], flags["save"]) == ("/root/out/$${run-id}/checkpoints",) * 2
    assert "run-matrix-run" not in text and "6180339887" not in text
    assert (
        "# note: create_run_id() names each run by the clock; --load, --save name it $${run-id}, made anew"
        " for each attempt in the same form (each run has folders of its own, as the test's runs do)"
        " (test_run_named.py:7)\n"
    ) in text
    launch = render(pipeline.cell(checkout.parent / "out" / "spec.yaml"))
    assert launch.run_id == ("--load", "--save")


@pytest.mark.parametrize(
    ("test", "line", "why"),
    [
        (
            "test_run_named_made.py",
            8,
            "runs a command with 'mkdir -p /root/out/run-matrix-run-id-6180339887' (its command), which holds"
            f" the run's name create_run_id() made, or part of it: {SPEC_ONLY}",
        ),
        (
            "test_run_named_changed.py",
            7,
            "launches with '/root/out/run_matrix_run_id_6180339887' (its args.train_args), which holds the"
            f" run's name create_run_id() made, or part of it: {SPEC_ONLY}",
        ),
    ],
)
def test_a_run_name_outside_the_flags_or_changed_is_refused_at_its_line(checkout, test, line, why):
    script = checkout / OWN / test
    assert refused(checkout, script) == f"{script}:{line}: error [import]: {test} cannot be imported: it {why}\n  ==> nothing was written"
