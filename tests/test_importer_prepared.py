"""run-matrix import of what a function of the test's own recorded as a prepare call returns, as the
test's own code goes on with it, and of the listings of a download that make a function such a call.

In the sandbox the call returns a stand-in path (``returned.Prepared``) that a spec hands to a
launch's flags as ``$${prepared:FUNCTION}``: joined to more text it is what the node's result would
give, but a comparison, a method or a slice of its text (``returned.PreparedText``), a path function
that gives another path for another result (``prepared_paths.py``), or a text that reaches the launch
changed (``prepared_results.py``) is refused at the script's line. The checkout is ``fake-miles``
with ``own-checks`` laid over it (see its README).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_importer_own_calls import OWN, imported, own_checks_checkout
from tests.test_importer_own_calls import refusal as refused

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

FORM = "a spec hands what a prepare step of kind call returns only to a launch's flags, as text"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return own_checks_checkout(tmp_path)


def refusal(checkout: Path, test: str) -> str:
    """Why importing ``test`` of the checkout's own tests is refused (nothing is written)."""
    return refused(checkout, checkout / OWN / test)


def test_names_joined_to_what_a_prepare_call_returns_reach_the_launch_joined_to_its_reference(checkout):
    data, text = imported(checkout, "test_prepared_listing_joined.py")
    assert data["args"]["misc"]["load-debug-rollout-data"] == "$${prepared:cycled}/steps/{rollout_id}.pt"
    assert data["args"]["misc"]["dump-details"] == "$${prepared:cycled}/dumps"  # Path(folder) / "dumps"
    assert "run-matrix-prepared" not in text and "5089417263" not in text
    assert (
        "what it returns goes into --load-debug-rollout-data, --dump-details as $${prepared:cycled}"
    ) in text


@pytest.mark.parametrize(
    ("test", "line", "reason"),
    [
        (  # folder.startswith("/tmp/") would decide the number of steps by the stand-in
            "test_prepared_listing_compared.py",
            11,
            "makes text of what cycled() returns and calls .startswith() on it in code of its own, which"
            f" import cannot follow: it did not run here, and {FORM}, whole ($${{prepared:cycled}})",
        ),
        (  # str(folder)[:-1]
            "test_prepared_listing_sliced.py",
            11,
            "makes text of what cycled() returns and takes characters of it in code of its own, which"
            f" import cannot follow: it did not run here, and {FORM}, whole ($${{prepared:cycled}})",
        ),
        (  # Path(folder).parent: the stand-in's is /, which the spec would launch with
            "test_prepared_listing_parent.py",
            13,
            "takes Path.parent of what cycled() returns, which gives another path for another result"
            f" (import does not know the one the call returns on the node): {FORM}, whole or with more"
            " joined to it (os.path.join(x, NAME), Path(x) / NAME, f'{x}/NAME')",
        ),
        (  # Path(folder) != DEFAULT
            "test_prepared_listing_asked.py",
            15,
            "asks Path == Path of what cycled() returns, which the path the call returns on the node would"
            f" answer, not import: {FORM}",
        ),
        (  # os.path.islink(folder): os.lstat, as os.stat, of a path that was never made here
            "test_prepared_listing_islink.py",
            13,
            "looks up /run-matrix-prepared-1-5089417263, made of what cycled() returns: recorded as a"
            " prepare step of kind call, it did not run here, and a spec hands what it returns only to a"
            " launch's flags ($${prepared:cycled}), which nothing before the launch reads",
        ),
    ],
)
def test_what_the_test_makes_of_a_prepare_calls_result_that_a_spec_cannot_is_refused_at_its_line(
    checkout, test, line, reason
):
    assert refusal(checkout, test) == (
        f"{checkout / OWN / test}:{line}: error [import]: {test} cannot be imported: it {reason}\n"
        "  ==> nothing was written"
    )


@pytest.mark.parametrize(
    ("test", "line", "reason"),
    [
        (  # f"{cycled(6)}/{{rollout_id}}.pt".replace("-", "_"): a method of a longer text, not followed
            "test_prepared_listing_renamed.py",
            12,
            "launches with '/run_matrix_prepared_1_5089417263/{rollout_id}.pt' (its args.train_args), a text"
            " made of what cycled() returns and changed in code of its own, which import cannot follow (a"
            f" method, a slice, a part of the path): it did not run here, and {FORM}, whole or with more"
            " joined to it ($${prepared:cycled})",
        ),
        (
            "test_prepared_listing_forged.py",
            11,
            "launches with '/run-matrix-prepared-2-5089417263' (its args.train_args), which holds"
            " run-matrix's stand-in for what a prepare step of kind call returns, though no prepare call"
            " returned it: a spec cannot hold it",
        ),
        (
            "test_prepared_listing_twice.py",
            11,
            "calls cycled() again (line 10 called it) and uses what a call of it returns: a spec's"
            " $${prepared:cycled} takes what one call of cycled() returns",
        ),
    ],
)
def test_a_launch_that_holds_a_prepare_calls_result_but_as_one_call_whole_is_refused(
    checkout, test, line, reason
):
    assert refusal(checkout, test) == (
        f"{checkout / OWN / test}:{line}: error [import]: {test} cannot be imported: it {reason}\n"
        "  ==> nothing was written"
    )


@pytest.mark.parametrize(
    ("test", "listed"),
    [
        # glob("/root/datasets/*/*.pt"): the folder the download lies in, whose listing shows it
        ("test_prepared_listing_parent_folder.py", "/root/datasets, which holds /root/datasets/own-rollouts"),
        # os.listdir(os.fsencode(LINK)) of a link the function made to the download's folder
        ("test_prepared_listing_linked.py", "/tmp/own-rollouts-link"),
    ],
)
def test_a_listing_of_a_download_by_another_name_makes_its_function_a_prepare_call(checkout, test, listed):
    data, text = imported(checkout, test)
    assert data["prepare"]["steps"] == {"kind": "call", "call": f"{OWN}/{test}:steps"}
    assert data["args"]["misc"]["num-epoch"] == "$${prepared:steps}"
    assert (
        f"# note: steps() lists {listed}, which `hf download own/rollouts` would have written (import does"
        " not know which files the repo holds): the spec calls steps() itself"
    ) in text


def test_a_downloads_folder_is_there_once_the_download_ran(checkout):
    data, _ = imported(checkout, "test_prepared_listing_probed.py")  # steps = 6 if isdir(ROLLOUTS) else 3
    assert data["args"]["misc"]["num-epoch"] == 6


def test_a_generator_that_lists_a_download_is_refused_as_a_prepare_call(checkout):
    test = "test_prepared_listing_generated.py"
    assert refusal(checkout, test) == (
        f"{checkout / OWN / test}:16: error [import]: {test} cannot be imported: it prepares the node in"
        " rollouts(), which is a generator or coroutine function: calling it runs none of its code, and a"
        " launch takes what a prepare step of kind call returns as text or a path: a spec's prepare step"
        " of kind call names a top-level function of a test of the checkout (PATH.py:function) with JSON"
        " arguments\n  ==> nothing was written"
    )
