"""run-matrix import of a test that does in a function of its own what no step, launch or check of a
spec does, and of which the spec calls the function itself (``importer/own_calls.py``); its body
never runs in the sandbox:

* preparing the node with what no prepare step runs (``uv venv``, ``git clone``, ``cd X && "$(...)"``)
  becomes a prepare step of kind call;
* starting a thread that runs beside the job becomes a ``launch.before_submit`` hook, with the
  method the test stops it by, and what the test reads of it a ``$${hook:...}`` check argument;
* reading what its launches wrote in the lines after them, in the function that launched through a
  function of its own, becomes a ``verify:`` entry calling that function again with its launches
  doing nothing (``launched_by``).

The checkout is ``fake-miles`` with ``own-checks`` laid over it (see its README).
"""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import Request, capture, import_test
from runner.spec.load import load
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

TODAY = datetime.date(2026, 12, 1)
OWN = "tests/e2e/own"


def own_checks_checkout(tmp_path: Path) -> Path:
    """``fake-miles`` with ``own-checks`` laid over it, in ``tmp_path``."""
    tmp_path.chmod(0o755)  # read in the sandbox as the unprivileged user nobody
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    shutil.copytree(DATA / "own-checks", root, dirs_exist_ok=True)
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return own_checks_checkout(tmp_path)


def imported(checkout: Path, test: str) -> tuple[dict, str]:
    spec = checkout.parent / "out" / "spec.yaml"
    import_test(Request(checkout / OWN / test, spec, hardware="h200", miles_root=checkout, today=TODAY))
    return load(spec).data, spec.read_text()


def refusal(checkout: Path | None, script: Path) -> str:
    out = script.parent.parent / "out" / "spec.yaml" if checkout else Path("/nonexistent/out/spec.yaml")
    with pytest.raises(SpecError) as caught:
        import_test(Request(script, out, hardware="h200", miles_root=checkout, today=TODAY))
    assert not out.exists()  # nothing was written
    return str(caught.value)


def test_a_function_of_its_own_that_runs_what_no_step_runs_becomes_a_call_step(checkout):
    data, text = imported(checkout, "test_prepared_by_own.py")
    assert data["prepare"] == {
        "dirs": {"kind": "mkdir", "paths": ["/root/datasets"]},  # outside prepare(): a step of its own
        "prepare": {
            "kind": "call",
            "call": f"{OWN}/test_prepared_by_own.py:prepare",
            "args": {"venv": "/tmp/own-env/venv", "depth": 2},  # a Path as text; the default it overrode
        },
    }
    # what prepare() runs is its own affair on the node: none of it reached the spec, and its body
    # never ran here (its copytree of a clone that never happened would have failed the import)
    held = json.dumps(data)
    assert not [ran for ran in ("uv venv", "git clone", "uv tool dir", "own-env-src") if ran in held]
    assert data["args"]["misc"]["dump-details"] == "/tmp/own-env/dumps"
    assert "prepare() runs `mkdir" not in text  # a step; the note names the first command that is none
    assert (
        "# note: prepare() runs `uv venv ...`, which no prepare step runs: the spec calls prepare() itself,"
        " as a prepare step of kind call (every time the cell runs, from the checkout's root); what it does"
        " there is the test's own, not the spec's (test_prepared_by_own.py:23)"
    ) in text


def test_what_a_recorded_function_returns_is_not_known_and_a_method_of_it_is_refused(checkout):
    said = refusal(checkout, checkout / OWN / "test_prepared_then_used.py")
    assert "test_prepared_then_used.py:15" in said  # tool.rstrip('/')
    assert (
        "it uses what install() returns, which import does not know: recorded as a prepare step of kind call,"
        " it did not run here, and a spec hands what a prepare step of kind call returns only to a launch's"
        " flags, as text ($${prepared:install})"
    ) in said


def test_what_a_recorded_function_returns_reaches_the_launch_as_a_prepared_reference(checkout):
    # run fails the step when the call returns no text, so `install() or DEFAULT` takes no default
    data, text = imported(checkout, "test_prepared_or_default.py")
    assert data["prepare"]["install"] == {
        "kind": "call",
        "call": f"{OWN}/test_prepared_or_default.py:install",
    }
    assert (
        data["args"]["misc"]["dump-details"] == "$${prepared:install}/dumps"
    )  # resolved: ${prepared:install}/dumps
    assert "    dump-details: $${prepared:install}/dumps\n" in text  # escaped from the resolver
    assert (
        "what it returns goes into --dump-details as $${prepared:install}, filled with what the call"
        " returned when the cell runs (test_prepared_or_default.py:14)"
    ) in text


def test_a_function_that_lists_a_download_becomes_a_call_whose_result_the_launch_takes(checkout):
    data, text = imported(checkout, "test_prepared_listing.py")
    assert list(data["prepare"]) == ["model", "cycled"]  # the download first, as the script ran them
    assert data["prepare"]["cycled"] == {
        "kind": "call",
        "call": f"{OWN}/rollouts.py:cycled",
        "args": {"count": 6},
    }
    assert data["args"]["misc"]["load-debug-rollout-data"] == "$${prepared:cycled}/{rollout_id}.pt"
    assert "run-matrix-prepared" not in text  # the stand-in never reaches the spec
    assert (
        "# note: cycled() lists /root/datasets/own-rollouts, which `hf download own/rollouts` would have"
        " written (import does not know which files the repo holds): the spec calls cycled() itself"
    ) in text


def test_a_launching_function_that_lists_a_download_is_refused_for_the_listing(checkout):
    # recorded as a prepare call, main() would take its launch with it: the first run's reason stands
    said = refusal(checkout, checkout / OWN / "test_prepared_listing_launcher.py")
    assert "test_prepared_listing_launcher.py:10" in said
    assert (
        "it lists /root/datasets/own-rollouts, which `hf download own/rollouts` would have written: import"
        " does not know which files the repo holds"
    ) in said
    assert "never calls execute_train" not in said


@pytest.mark.parametrize(
    ("script", "line", "said"),
    [
        (
            "test_prepared_listing_looked_up.py",
            13,
            "it looks up /run-matrix-prepared-1-5089417263, made of what cycled() returns: recorded as a"
            " prepare step of kind call, it did not run here, and a spec hands what it returns only to a"
            " launch's flags ($${prepared:cycled}), which nothing before the launch reads",
        ),
        (
            "test_prepared_listing_run.py",
            11,
            "it runs a command with what cycled() returns: a spec hands what a prepare step of kind call"
            " returns only to a launch's flags, as text ($${prepared:cycled})",
        ),
        (
            "test_prepared_listing_formatted.py",
            11,
            "it formats what cycled() returns with '>60': a spec hands what a prepare step of kind call"
            " returns only to a launch's flags, as text, whole",
        ),
        (
            "test_prepared_listing_in_env.py",
            11,
            "it launches with what cycled() returns (its args.extra_env_vars.OWN_ROLLOUTS): a spec hands"
            " what a prepare step of kind call returns only to a launch's flags",
        ),
    ],
)
def test_what_a_prepare_call_returns_used_but_as_a_launch_flag_is_refused(checkout, script, line, said):
    found = refusal(checkout, checkout / OWN / script)
    assert f"{script}:{line}" in found
    assert said in found


def test_a_file_a_recorded_function_would_leave_read_later_fails_with_that_said(checkout):
    said = refusal(checkout, checkout / OWN / "test_prepared_then_read.py")
    assert "test_prepared_then_read.py:14" in said
    assert (
        "raises FileNotFoundError: [Errno 2] No such file or directory: '/tmp/own-tools/version.txt'" in said
    )
    assert (
        "(install(), which runs what no prepare step runs, became a prepare step of kind call and did not"
        " run here: what it leaves behind is not there)"
    ) in said


def test_what_no_step_runs_in_the_launching_function_itself_is_refused_as_before(checkout):
    said = refusal(checkout, checkout / OWN / "test_prepared_in_launcher.py")
    assert "test_prepared_in_launcher.py:9" in said
    assert (
        "runs `uv tool install tiny==1.0` before launching, which is no prepare step run-matrix has" in said
    )


def test_a_preparing_function_given_what_json_cannot_hold_is_refused(checkout):
    said = refusal(checkout, checkout / OWN / "test_prepared_with_object.py")
    assert "test_prepared_with_object.py:16" in said
    assert "prepares the node in install(), which calls install() with pins=Pins(" in said
    assert "which is no JSON value" in said


def test_without_a_checkout_there_is_no_path_to_name_the_function_by():
    said = refusal(None, DATA / "import" / "refuse_prepares_outside_a_checkout.py")
    assert (
        "it prepares the node in prepare(), which a spec names by its path in the checkout: import with"
        " --miles-root"
    ) in said


def test_code_of_its_own_beside_the_job_becomes_a_hook_with_its_stop_and_state(checkout):
    data, text = imported(checkout, "test_beside.py")
    assert data["launch"]["before_submit"] == [
        {
            "call": f"{OWN}/injector.py:spawn_counter",
            "args": {"out": "/tmp/own-beside-3.count", "interval_seconds": 0.5},
            "stop": {"call": "stop_and_join", "args": {"timeout_seconds": 5}},
        }
    ]
    assert data["verify"] == {
        "verify": {
            "call": f"{OWN}/test_beside.py:verify",
            "args": {"dump_dir": "/tmp/own-beside", "injections": "$${hook:spawn_counter.ticks}"},
        }
    }
    assert "injections: $${hook:spawn_counter.ticks}" in text  # escaped: read at run time, not resolved
    assert "4172635089" not in text  # the sandbox's stand-in for the count reached nothing else


def test_what_it_reads_of_code_beside_the_job_used_in_code_of_its_own_is_refused(checkout):
    said = refusal(checkout, checkout / OWN / "test_beside_used.py")
    assert "test_beside_used.py:11" in said
    assert "it reads spawn_counter().ticks and compares it in code of its own" in said


def test_what_it_reads_of_code_beside_the_job_compared_before_a_check_gets_it_is_refused(checkout):
    # the stand-in's digits would pass `assert ticks > 3` and the spec would lose the comparison
    said = refusal(checkout, checkout / OWN / "test_beside_compared.py")
    assert "test_beside_compared.py:20" in said
    assert (
        "it reads spawn_counter().ticks and compares it in code of its own: a spec reads a hook's state"
        " only as a whole argument of a check after the job (verify: ... $${hook:FUNCTION.ATTRIBUTE})"
    ) in said


@pytest.mark.parametrize(
    ("test", "line", "function"),
    [("test_prepared_then_redefined.py", 14, "prepare"), ("test_beside_rebound.py", 18, "verify")],
)
def test_a_function_its_module_binds_to_something_else_after_the_call_is_refused(
    checkout, test, line, function
):
    # a spec's PATH.py:function calls what the module holds last: the second prepare(), or print
    said = refusal(checkout, checkout / OWN / test)
    assert f"{test}:{line}" in said
    assert (
        f"it calls {function}() as {OWN}/{test}:{function}, and its module binds {function} to something"
        " else later: a spec's PATH.py:function calls what the module holds last (a function defined once,"
        " at the top level)"
    ) in said


def test_code_beside_each_of_two_launches_is_each_cells_hook_with_its_own_stop(checkout):
    # the second handle's stop was taken for a second stop of the first ("a hook has one stop")
    data, _ = imported(checkout, "test_beside_each_launch.py")
    overlay = load(checkout.parent / "out" / "components" / "spec-call-2.yaml").data
    hook = {"call": f"{OWN}/injector.py:spawn_counter", "args": {"interval_seconds": 0.02}}
    (first,) = data["launch"]["before_submit"]
    (second,) = overlay["launch"]["before_submit"]
    assert first == {
        **hook,
        "args": {"out": "/tmp/own-beside-1.count", "interval_seconds": 0.02},
        "stop": {"call": "stop_and_join", "args": {"timeout_seconds": 1}},
    }
    assert second == {
        **hook,
        "args": {"out": "/tmp/own-beside-2.count", "interval_seconds": 0.02},
        "stop": {"call": "stop_and_join", "args": {"timeout_seconds": 2}},
    }


def test_code_of_one_function_started_twice_beside_one_launch_is_refused(checkout):
    said = refusal(checkout, checkout / OWN / "test_beside_twice.py")
    assert "test_beside_twice.py:9" in said
    assert (
        "it runs beside its launch spawn_counter(), which it calls again before the launch both run beside:"
        " import tells what the test does with each (its stop, what it reads) by the function's name alone"
    ) in said


def test_the_runs_that_record_functions_as_calls_share_one_runs_time(checkout):
    # each of its three runs waits 2 s; each had the whole timeout, so a script could triple it
    script = checkout / OWN / "test_prepared_in_three_runs.py"
    with pytest.raises(SpecError) as caught:
        capture.record(script, {}, (), miles_root=checkout, timeout=5.5)
    assert str(caught.value).splitlines()[0] == (
        f"{script}: error [import]: test_prepared_in_three_runs.py cannot be imported: it did not finish"
        " within 5.5 s under the recorder in all its runs together (it ran again with functions of its own"
        " recorded as calls): does it wait for something?"
    )
    run = capture.record(script, {}, (), miles_root=checkout)  # within the default, both are calls
    assert [step.name for step in run.prepare] == ["make_venv", "clone"]


@pytest.mark.parametrize(
    ("test", "why"),
    [
        ("test_forged_call.py", "KeyError: 'function'"),
        ("test_forged_thread.py", "ValueError: 5 names no function of a file"),
    ],
)
def test_a_trace_the_script_wrote_into_is_refused_without_a_traceback(checkout, test, why):
    # the script shares the recorder's interpreter: the calls' records were read as the recorder's and
    # import died with a KeyError or TypeError outside the sandbox
    said = refusal(checkout, checkout / OWN / test)
    assert said.splitlines()[0] == (
        f"{checkout / OWN / test}: error [import]: {test} cannot be imported: it left a record the recorder did"
        f" not write ({why}): does it change run-matrix's recorder in its interpreter?"
    )


def test_what_the_test_makes_of_its_home_is_home_where_the_spec_runs(checkout):
    # the sandbox's private HOME (/tmp/home) was written into the spec, a folder no node has
    data, text = imported(checkout, "test_prepared_at_home.py")
    assert data["prepare"]["prepare"]["args"] == {"venv": "$${HOME}/own-env"}
    assert (data["args"]["misc"]["save"], data["args"]["misc"]["dump-details"]) == (
        "$${HOME}/ckpt",
        "$${HOME}",
    )
    assert "/tmp/home" not in text


def test_a_function_rebound_after_the_call_is_told_apart_from_one_whose_name_starts_alike(checkout):
    # verify = print at the end: the check is verify_all(), which its module still holds
    data, _ = imported(checkout, "test_beside_other_rebound.py")
    assert data["verify"]["verify-all"]["call"] == f"{OWN}/test_beside_other_rebound.py:verify_all"


def test_a_thread_the_launching_function_starts_itself_is_refused_as_before(checkout):
    said = refusal(checkout, checkout / OWN / "test_beside_inline.py")
    assert "test_beside_inline.py:11" in said
    assert "launches while a thread of its own runs (Event.wait, started at test_beside_inline.py:10)" in said


def test_what_a_function_checks_after_its_launches_is_it_called_again_without_them(checkout):
    data, text = imported(checkout, "test_replayed.py")
    assert "verify" not in data  # the first cell: the left run, which nothing checks yet
    second = load(checkout.parent / "out" / "components" / "spec-call-2.yaml").data
    assert second["verify"] == {
        "execute": {
            "call": f"{OWN}/test_replayed.py:execute",
            "args": {"family": "tiny"},
            "launched_by": ["_run"],
        }
    }
    assert second["args"]["misc"]["dump-details"] == "/tmp/own-replay/right"
    assert (
        "# note: execute() reads /tmp/own-replay/left/summary.txt, which its launches wrote in code of its"
        " own after them: the spec checks the run by calling execute() again once the cell's job has ended,"
        " with _run() doing nothing there (verify: ... launched_by), as the cells before ran those launches"
    ) in text


def test_a_function_that_launched_by_itself_and_reads_the_run_is_refused(checkout):
    said = refusal(checkout, checkout / OWN / "test_replayed_direct.py")
    assert "test_replayed_direct.py:14" in said
    assert "it reads /tmp/own-direct/summary.txt, which its launch at line 9 would write" in said
