"""Tests recorded together (together.py, harness.py --each): each kept as a recording alone keeps it,
or left to one.

The comparison is with ``capture.record`` itself, on real miles tests and on the fake checkout:
what a suite import finds in the cache must be what it would have recorded alone.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from runner.errors import SpecError
from runner.importer import capture, recordings, together
from runner.knowledge import bundled
from tests.conftest import fake_checkout

pytestmark = pytest.mark.allow_subprocess  # each recording runs in a sandbox interpreter

SECRETS = bundled.conventions().secrets
VERIFIERS = tuple(bundled.conventions().verifiers)


def kept(cache: Path, test: Path, root: Path, env: dict[str, str]) -> dict[str, Any] | None:
    """What ``capture.record`` finds in ``cache`` for ``test`` recorded in ``env``."""
    argv, _, reads = capture.inputs(test.resolve(), {}, SECRETS, root, VERIFIERS)
    entry_key, _ = recordings.key(capture.key_parts(argv, env, capture.TIMEOUT_S, False, reads), reads)
    return recordings.load(cache, entry_key)


def without_ids(data: Any, seen: dict[int, str] | None = None) -> Any:
    """``data`` with each object id (``id()`` of a frame or a function, as the trace holds them to
    tell one from another) named by its order: two processes give one object other ids."""
    seen = {} if seen is None else seen
    if isinstance(data, bool) or not isinstance(data, (int, list, dict)):
        return data
    if isinstance(data, int):
        return seen.setdefault(data, f"id{len(seen)}") if data > 1 << 32 else data
    if isinstance(data, list):
        return [without_ids(item, seen) for item in data]
    return {key: without_ids(value, seen) for key, value in data.items()}


def test_real_tests_recorded_together_are_kept_as_each_one_alone_is(upstream_miles, tmp_path):
    root = upstream_miles("31f1ca96")
    tests = sorted((root / "tests" / "e2e" / "short").glob("test_*.py"))
    rocm = {"MILES_HARDWARE_PLATFORM": "rocm", capture.BUILD_VARIABLE: "rocm"}
    for switches in ({}, rocm):  # the unset environment, and the ROCm side's
        env = together.env_of(switches, SECRETS, VERIFIERS, root)
        cache, alone = tmp_path / f"together-{len(switches)}", tmp_path / f"alone-{len(switches)}"
        wanted = [together.Wanted.of(test, env) for test in tests]
        assert together.record(wanted, root, cache, SECRETS, jobs=2) == set(wanted)
        for test in tests:
            with contextlib.suppress(SpecError):  # a refusal (never launches) is kept all the same
                capture.record(test, switches, SECRETS, miles_root=root, verifiers=VERIFIERS, cache=alone)
            found, made = kept(cache, test, root, env), kept(alone, test, root, env)
            assert found is not None and made is not None
            assert without_ids(found["trace"]) == without_ids(made["trace"]), test.name
            assert found["output"] == made["output"], test.name


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = fake_checkout(tmp_path, "main-layout")
    tree = root / "tests" / "e2e" / "tree"
    for folder in ("spins", "shadows"):
        (tree / folder).mkdir(parents=True)
    case = root / "tests" / "e2e" / "tiny_family" / "test_nv_case.py"
    shutil.copy(case, tree / "test_nv_case.py")
    (tree / "spins" / "test_spins.py").write_text("while True:\n    pass\n")
    shutil.copy(case, tree / "shadows" / "test_nv_case.py")
    (tree / "shadows" / "miles.py").write_text("")  # a module the load of miles' helpers looks up
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def test_what_may_differ_from_a_recording_alone_is_left_to_one(checkout, tmp_path, monkeypatch):
    monkeypatch.setattr(together, "FORK_LIMIT_S", 2.0)
    tree, cache = checkout / "tests" / "e2e" / "tree", tmp_path / "cache"
    outside = tmp_path / "outside" / "test_nv_case.py"
    outside.parent.mkdir(mode=0o755)
    shutil.copy(tree / "test_nv_case.py", outside)
    tests = [tree / "test_nv_case.py", tree / "spins" / "test_spins.py", tree / "shadows" / "test_nv_case.py"]
    env = together.env_of({}, SECRETS, VERIFIERS, checkout)
    wanted = [together.Wanted.of(test, env) for test in [*tests, outside]]
    assert together.record(wanted, checkout, cache, SECRETS) == {wanted[0]}
    assert kept(cache, tests[0], checkout, env) is not None
    assert all(kept(cache, test, checkout, env) is None for test in tests[1:])
    # a recording kept is what the import takes: the next import runs no sandbox for it
    recorded = capture.record(tests[0], {}, SECRETS, miles_root=checkout, verifiers=VERIFIERS, cache=cache)
    assert recorded.calls and recorded.calls[0].args["train_args"]
    # asked again, nothing is recorded twice: what is kept stays, nothing else is tried here
    assert together.record(wanted[:1], checkout, cache, SECRETS) == set()


def test_a_checkout_whose_helpers_do_not_load_keeps_nothing(checkout, tmp_path):
    helpers = checkout / "miles" / "utils" / "external_utils" / "command_utils.py"
    helpers.write_text("raise ImportError('broken on purpose')\n")
    test = checkout / "tests" / "e2e" / "tree" / "test_nv_case.py"
    env = together.env_of({}, SECRETS, VERIFIERS, checkout)
    assert together.record([together.Wanted.of(test, env)], checkout, tmp_path / "cache", SECRETS) == set()
    with pytest.raises(Exception, match="cannot load miles' helpers"):
        capture.record(test, {}, SECRETS, miles_root=checkout, verifiers=VERIFIERS, cache=tmp_path / "cache")


def test_a_test_cannot_write_what_the_tests_after_it_record(checkout, tmp_path):
    tree = checkout / "tests" / "e2e" / "tree"
    scribbler = (
        tree / "test_scribbles.py"
    )  # before test_nv_case.py: forked first, the others' files open then
    scribbler.write_text(
        "import os\nfor fd in range(3, 256):\n    try:\n        os.write(fd, b'{\"events\": []}')\n"
        "    except OSError:\n        pass\n"
    )
    scribbler.chmod(0o644)
    case = tree / "test_nv_case.py"
    env = together.env_of({}, SECRETS, VERIFIERS, checkout)
    wanted = [together.Wanted.of(test, env) for test in (scribbler, case)]
    assert wanted[1] in together.record(wanted, checkout, tmp_path / "together", SECRETS)
    capture.record(case, {}, SECRETS, miles_root=checkout, verifiers=VERIFIERS, cache=tmp_path / "alone")
    found, made = (
        kept(tmp_path / "together", case, checkout, env),
        kept(tmp_path / "alone", case, checkout, env),
    )
    assert found is not None and made is not None
    assert without_ids(found["trace"]) == without_ids(made["trace"]) and found["trace"]["events"]


TP = {"MILES_TEST_TP": "2"}  # a switch of switched_case()'s


def switched_case(checkout: Path) -> Path:
    """The tree's tiny case with its tensor parallel size read from MILES_TEST_TP."""
    case = checkout / "tests" / "e2e" / "tree" / "test_nv_case.py"
    switched = case.with_name("test_switched.py")
    text = case.read_text().replace("tp_size=4", 'tp_size=int(os.environ.get("MILES_TEST_TP", "4"))')
    switched.write_text(f"import os\n{text}")
    switched.chmod(0o644)
    return switched


def sandboxes_run(monkeypatch) -> list[list[str]]:
    """The argv of each sandbox that records tests together, from here on."""
    real, made = together.sandbox.run, []

    def counted(argv, *args, **kwargs):
        made.append(argv)
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(together.sandbox, "run", counted)
    return made


def test_forks_of_one_sandbox_each_set_their_own_switches_and_are_kept_as_each_alone(
    checkout, tmp_path, monkeypatch
):
    case = switched_case(checkout)
    unset, switched = (together.env_of(s, SECRETS, VERIFIERS, checkout) for s in ({}, TP))
    wanted = [together.Wanted.of(case, unset), together.Wanted.of(case, switched)]
    made = sandboxes_run(monkeypatch)
    assert together.record(wanted, checkout, tmp_path / "together", SECRETS, jobs=2) == set(wanted)
    assert len(made) == 1  # one load of miles' helpers for both
    traces = []
    for switches, env in (({}, unset), (TP, switched)):
        capture.record(
            case, switches, SECRETS, miles_root=checkout, verifiers=VERIFIERS, cache=tmp_path / "alone"
        )
        found, alone = (
            kept(tmp_path / "together", case, checkout, env),
            kept(tmp_path / "alone", case, checkout, env),
        )
        assert found is not None and alone is not None
        assert without_ids(found["trace"]) == without_ids(alone["trace"])
        traces.append(found["trace"])
    launched = [json.dumps(trace["events"]) for trace in traces]  # the switch took, in its fork only
    assert "--tensor-model-parallel-size 4" in launched[0] and "--tensor-model-parallel-size 2" in launched[1]


@pytest.mark.parametrize(
    "line",
    [
        'os.environ.get("MILES_TEST_TP")',  # read
        'os.environ["MILES_TEST_TP"] = "8"',  # set: alone, the switch's value would be gone
        "dict(os.environ)",  # listed: what it kept of it, no one knows
        'os.putenv("MILES_TEST_TP", "8")',
    ],
)
def test_a_fork_whose_switch_the_load_touched_is_left_to_a_recording_alone(checkout, tmp_path, line):
    helpers = checkout / "miles" / "utils" / "external_utils" / "command_utils.py"
    helpers.write_text(f"import os\n{line}\n{helpers.read_text()}")
    case = switched_case(checkout)
    unset, switched = (together.env_of(s, SECRETS, VERIFIERS, checkout) for s in ({}, TP))
    wanted = [together.Wanted.of(case, unset), together.Wanted.of(case, switched)]
    assert together.record(wanted, checkout, tmp_path / "cache", SECRETS) == {wanted[0]}
    assert kept(tmp_path / "cache", case, checkout, switched) is None


def test_a_fork_that_records_a_function_the_load_ran_as_a_call_is_left_to_a_recording_alone(
    checkout, tmp_path
):
    # alone, a function is recorded as a call from the interpreter's start; in a fork, only from its
    # own: one whose module the load ran cannot be (here, one of miles' helpers themselves)
    helpers = checkout / "miles" / "utils" / "external_utils" / "command_utils.py"
    case = checkout / "tests" / "e2e" / "tree" / "test_nv_case.py"
    unset = together.env_of({}, SECRETS, VERIFIERS, checkout)

    def calling(file: Path) -> dict[str, str]:
        entry = {"file": str(file), "function": "prepare", "role": "prepare", "why": "-", "launched_by": []}
        return {**unset, capture.RECORDED_CALLS_VARIABLE: json.dumps([entry])}

    common = checkout / "tests" / "e2e" / "tiny_family" / "_common.py"  # the test's own: run by the fork
    wanted = [together.Wanted.of(case, env) for env in (unset, calling(common), calling(helpers))]
    assert together.record(wanted, checkout, tmp_path / "cache", SECRETS) == set(wanted[:2])
