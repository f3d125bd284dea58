"""importer/prepared_results.py: what the prepare calls of a trace returned (stand-in paths), as
``${prepared:FUNCTION}`` in the launches' flags they reached, or a refusal at the line of the event
that holds one where a spec cannot: changed, of a call there is not, of a function called twice, in a
mapping's key, or in a launch before its call."""

from __future__ import annotations

from typing import Any

import pytest

from runner.errors import SpecError
from runner.importer import prepared_results

SCRIPT = "/m/tests/e2e/own/test_x.py"
FORM = "a spec hands what a prepare step of kind call returns only to a launch's flags, as text"


def call(number: int, line: int, function: str = "cycled") -> dict[str, Any]:
    return {
        "kind": "prepare-call",
        "at": [SCRIPT, line],
        "function": function,
        "call": f"tests/e2e/own/rollouts.py:{function}",
        "args": {"count": number},
        "reason": "lists /d",
        "stand_in": f"/run-matrix-prepared-{number}-5089417263",
    }


def launch(train_args: str, line: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "kind": "train",
        "at": [SCRIPT, line],
        "args": {"train_args": train_args, "extra_env_vars": env or {}},
        "commands": [],
        "variables": {"EXTRA": train_args},
        "caller": {"function": "<module>", "parameters": {}},
    }


def refusal(events: list[dict[str, Any]]) -> str:
    with pytest.raises(SpecError) as caught:
        prepared_results.place(events)
    return str(caught.value)


def refused(line: int, reason: str) -> str:
    return f"{SCRIPT}:{line}: error [import]: test_x.py cannot be imported: it {reason}\n  ==> nothing was written"


def test_each_stand_in_becomes_its_functions_reference_in_the_flags_it_reached():
    events = [
        call(1, 9),
        call(2, 10, "dumps"),
        launch(
            "--load-debug-rollout-data /run-matrix-prepared-1-5089417263/{rollout_id}.pt"
            " --dump-details /run-matrix-prepared-2-5089417263",
            11,
        ),
    ]
    prepared_results.place(events)
    assert events[2]["args"]["train_args"] == (
        "--load-debug-rollout-data ${prepared:cycled}/{rollout_id}.pt --dump-details ${prepared:dumps}"
    )
    assert events[2]["variables"]["EXTRA"] == events[2]["args"]["train_args"]  # a carrier, as train args
    assert (events[0]["flags"], events[1]["flags"]) == (["--load-debug-rollout-data"], ["--dump-details"])


@pytest.mark.parametrize(
    ("word", "line"),
    [
        ("/run_matrix_prepared_1_5089417263/x", 10),  # .replace("-", "_") of a longer text
        ("run-matrix-prepared-1-5089417263/x", 10),  # a slice that took the first /
        ("/RUN-MATRIX-PREPARED-1-5089417263", 10),  # .upper()
        ("/run-matrix-prepared-1-50894", 10),  # a slice that took the last digits
    ],
)
def test_a_stand_in_changed_on_its_way_to_the_launch_is_refused_with_the_word(word, line):
    assert refusal([call(1, 9), launch(f"--load-debug-rollout-data {word}", line)]) == refused(
        line,
        f"launches with {word!r} (its args.train_args), a text made of what cycled() returns and changed in"
        " code of its own, which import cannot follow (a method, a slice, a part of the path): it did not run"
        f" here, and {FORM}, whole or with more joined to it ($${{prepared:cycled}})",
    )


def test_a_stand_in_of_a_call_there_is_not_is_refused():
    events = [launch("--dump-details /run-matrix-prepared-1-5089417263", 10)]  # no call at all
    assert refusal(events) == refused(
        10,
        "launches with '/run-matrix-prepared-1-5089417263' (its args.train_args), which holds run-matrix's"
        " stand-in for what a prepare step of kind call returns, though no prepare call returned it: a spec"
        " cannot hold it",
    )


def test_a_function_called_twice_whose_result_is_used_is_refused_at_the_second_call():
    events = [call(1, 9), call(2, 12), launch("--dump-details /run-matrix-prepared-1-5089417263", 13)]
    assert refusal(events) == refused(
        12,
        "calls cycled() again (line 9 called it) and uses what a call of it returns: a spec's"
        " $${prepared:cycled} takes what one call of cycled() returns",
    )


def test_a_function_called_twice_whose_results_are_not_used_is_two_calls():
    events = [call(1, 9), call(2, 12), launch("--debug-train-only", 13)]
    prepared_results.place(events)
    assert (events[0]["flags"], events[1]["flags"]) == ([], [])


@pytest.mark.parametrize(
    ("events", "line", "reason"),
    [
        (  # the name of an env var: no flag
            [call(1, 9), launch("--debug-train-only", 10, {"/run-matrix-prepared-1-5089417263": "1"})],
            10,
            "launches with what cycled() returns (its args.extra_env_vars./run-matrix-prepared-1-5089417263)",
        ),
        (  # written by the script itself before the call made it
            [launch("--dump-details /run-matrix-prepared-1-5089417263", 8), call(1, 9)],
            8,
            "launches with what cycled() returns (its args.train_args) before calling it (line 9)",
        ),
        (  # another prepare call's argument
            [call(1, 9), {**call(2, 10, "install"), "args": {"into": "/run-matrix-prepared-1-5089417263"}}],
            10,
            "uses what cycled() returns",
        ),
    ],
)
def test_a_whole_stand_in_anywhere_but_a_later_launchs_flags_is_refused(events, line, reason):
    assert refusal(events) == refused(line, f"{reason}: {FORM} ($${{prepared:cycled}})")
