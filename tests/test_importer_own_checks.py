"""run-matrix import of a test that checks its run with a function of its own file: the call after
the launch becomes a ``verify:`` entry ``PATH.py:function``; its body never runs in the sandbox.

The checkout is ``fake-miles`` with ``own-checks`` laid over it (see its README).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import Request, import_test
from runner.spec.load import load
from tests.conftest import fake_checkout

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

TODAY = datetime.date(2026, 12, 1)
OWN = "tests/e2e/own"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return fake_checkout(tmp_path, "own-checks")


def imported(checkout: Path, test: str) -> tuple[dict, str, list[str]]:
    spec = checkout.parent / "out" / "spec.yaml"
    done = import_test(
        Request(checkout / OWN / test, spec, hardware="h200", miles_root=checkout, today=TODAY)
    )
    return load(spec).data, spec.read_text(), [note.message for note in done.notes]


def test_the_tests_own_checks_after_its_launch_become_verify_entries_and_never_run_here(checkout):
    data, text, notes = imported(checkout, "test_ray_logs.py")
    assert data["verify"] == {
        "assert-armed": {"call": f"{OWN}/test_ray_logs.py:_assert_armed"},  # no arguments: no args key
        "assert-streamed": {"call": f"{OWN}/test_ray_logs.py:_assert_streamed"},
    }
    said = (
        "() reads /tmp/ray/session_latest/logs/worker-*, Ray's default session: the cell's own only on a"
        " cluster started with Ray's default temp dir, while run starts a cell's Ray head with a private one"
        " (run-matrix-ray-*): run this cell on such a cluster, with --ray-address"
    )
    assert [n for n in notes if "session" in n] == [
        "_assert_armed" + said.replace("worker-*", "worker-*, /tmp/ray/session_latest/logs/armed"),
        "_assert_streamed" + said,
    ]
    assert "Ray's default session" in text  # the header keeps the notes


def test_a_file_name_with_a_dot_and_a_path_argument(checkout):
    data, _, _ = imported(checkout, "test_tiny_0.6B_dumped.py")
    assert data["verify"] == {
        "verify": {
            "call": f"{OWN}/test_tiny_0.6B_dumped.py:verify",
            "args": {"dump_dir": "/tmp/own-dumps/dump", "samples": 12},
        }
    }


@pytest.mark.parametrize(
    ("test", "line", "reason"),
    [
        (
            "test_lambda_argument.py",
            10,
            "passes _check() keep=function execute.<locals>.<lambda>, which a spec's verify: cannot hold (it"
            " gives a check JSON values: text, numbers, true/false, null, lists and mappings)",
        ),
        (
            "test_between_launches.py",
            10,
            "calls _note_step(), code of its own, between two launches of one function (line 11 launches"
            " again): what it does may feed that launch, which a spec's verify: cannot (a check runs after its"
            " cell's job)",
        ),
    ],
)
def test_an_own_check_a_spec_cannot_hold_is_refused_at_its_line(checkout, test, line, reason):
    with pytest.raises(SpecError) as caught:
        imported(checkout, test)
    (problem,) = caught.value.problems
    assert (problem.message, problem.locations[0].line) == (f"{test} cannot be imported: it {reason}", line)


def test_a_function_whose_result_the_test_uses_runs_as_before_and_fails_the_import(checkout):
    with pytest.raises(SpecError) as caught:
        imported(checkout, "test_result_used.py")
    (problem,) = caught.value.problems
    assert (problem.message, problem.locations[0].line) == (
        "test_result_used.py cannot be imported: it raises FileNotFoundError: [Errno 2] No such file or"
        " directory: '/tmp/own-dumps/passed' after launching (line 10), using what the run left (to check it,"
        " or for a later launch): a spec holds launches, not what follows from their output",
        5,
    )


def test_a_top_level_hook_of_the_test_s_becomes_launch_before_submit_and_never_runs_here(checkout):
    data, _, _ = imported(checkout, "test_hooked.py")
    assert data["launch"]["before_submit"] == [f"{OWN}/test_hooked.py:_start_router"]


HOOK_IS_CODE = (
    ": a spec's launch.before_submit names miles' own start_mooncake_master or a top-level function of a"
    " test of the checkout (PATH.py:function), with JSON arguments"
)


def test_a_closure_that_calls_a_function_of_the_test_with_what_it_holds_is_that_call(checkout):
    data, _, notes = imported(checkout, "test_hooked_closure.py")
    assert data["launch"]["before_submit"] == [
        {"call": f"{OWN}/test_hooked_closure.py:_start_teacher", "args": {"gpu": "4", "port": 13142}}
    ]
    assert (
        "sets CUDA_VISIBLE_DEVICES='0,1,2,3' in its own environment, which what it starts inherits (miles'"
        " `ray start`): a spec holds the job's env (env:), not the test process's; run starts each cell's Ray"
        " head with the GPUs the cell asks for (cluster.gpus_per_node)"
    ) in notes


@pytest.mark.parametrize(
    ("test", "line", "reason"),
    [
        (
            "test_hooked_closure_busy.py",
            16,
            "passes execute_train a before_ray_job_submit hook of its own (execute.<locals>.launch_teacher),"
            " which does more than call one function of the test with values it holds",
        ),
        (
            "test_hooked_closure_spread.py",
            19,
            "passes execute_train a before_ray_job_submit hook of its own (execute.<locals>.launch_teacher),"
            " which calls _start_teacher() with **: name each argument",
        ),
        (
            "test_hooked_closure_shadowed.py",
            20,
            "passes execute_train a before_ray_job_submit hook of its own (execute.<locals>.launch_teacher),"
            " which calls _start_teacher(), a name of its own (not its module's top-level function)",
        ),
        (
            "test_hooked_closure_int_keys.py",
            19,
            "passes execute_train a before_ray_job_submit hook of its own (execute.<locals>.launch_teacher),"
            " which calls _start_teacher() with gpu=a dict with keys that are not text, which is no JSON value"
            " (JSON values: text, numbers, true/false, null, lists and mappings)",
        ),
        (
            "test_hooked_with_parameter.py",
            10,
            "passes execute_train a before_ray_job_submit hook of its own (_start_teacher), which takes gpu",
        ),
    ],
)
def test_a_hook_a_spec_cannot_name_is_refused_with_the_reason(checkout, test, line, reason):
    with pytest.raises(SpecError) as caught:
        imported(checkout, test)
    (problem,) = caught.value.problems
    assert (problem.message, problem.locations[0].line) == (
        f"{test} cannot be imported: it {reason}{HOOK_IS_CODE}",
        line,
    )


def test_a_hook_of_the_test_s_needs_the_checkout_to_be_named(checkout):
    spec = checkout.parent / "out" / "spec.yaml"
    with pytest.raises(SpecError) as caught:
        import_test(Request(checkout / OWN / "test_hooked.py", spec, hardware="h200", today=TODAY))
    assert (
        "passes execute_train a before_ray_job_submit hook of its own (_start_router), which a spec names by"
        " its path in the checkout: import with --miles-root" + HOOK_IS_CODE in str(caught.value)
    )
    assert not spec.exists()
