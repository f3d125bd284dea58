"""`run-matrix bisect` before anything runs: hostile revisions and checkouts, resume ids, the plan of
`--dry-run`, and what changed in the launch between two commits. No Ray: nothing here submits a job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import bisect_history as history
from tests import test_run_on_ray as on_ray

specs = on_ray.specs
pytestmark = pytest.mark.allow_subprocess  # git builds the history; the door runs git


@pytest.fixture(scope="module")
def miles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[str, ...]]:
    root = tmp_path_factory.mktemp("bisect") / "miles-history"
    return root, history.build(root)


def bisect(cli, *argv: str):
    return cli("bisect", *argv, "--history", "h.sqlite")


def test_the_plan_names_every_commit_and_the_runs_it_expects(cli, specs, miles):
    root, ids = miles
    specs("async", extra="ci: {est_time: 600}")
    result = cli(
        "bisect",
        "m/fake/async.yaml",
        "--good",
        ids[0],
        "--bad",
        "main",
        "--miles-root",
        str(root),
        "--dry-run",
    )
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "bisect m/fake/async.yaml: 9 commits to split"
    assert lines[1] == f"  {ids[9][:12]}  bump the version (#19)"
    assert lines[10] == f"  {ids[0][:12]}  (good) base: the fake miles"
    assert (
        lines[11] == "expected: 18 runs (3 a commit; skips add to it), 24.00 GPU-hours (8 GPUs, 600 s a run)"
    )
    assert not Path("h.sqlite").exists()  # a plan records nothing
    shown = cli("bisect", "m/fake/async.yaml", "--good", ids[0], "--bad", ids[9][:8], "--miles-root", str(root),
                "--dry-run", "--retries", "2", "--format", "json")  # fmt: skip
    plan = json.loads(shown.out)
    assert (plan["expected_runs"], plan["gpus"], plan["gpu_hours"]) == (12, 8, 16.0)
    assert [c["pr"] for c in plan["candidates"]] == [11, 12, 13, 14, 15, 16, 17, 18, 19]


@pytest.mark.parametrize(
    ("good", "bad", "message"),
    [
        ("nope", "main", "--good 'nope': the checkout {root} has no such commit, branch or tag"),
        ("HEAD~3", "main", "--good 'HEAD~3': not a commit id or a ref name git accepts"),
        ("main", "{0}", "--good {9} comes after --bad {0}: swap them (the good commit is the older)"),
        ("main", "main", "--good and --bad name one commit ({9}): nothing lies between them"),
        ("$'\x1b[31m'", "main", "--good \"$'\\x1b[31m'\": not a commit id"),
    ],
)
def test_revisions_that_name_no_range_are_refused(cli, specs, miles, good, bad, message):
    root, ids = miles
    specs("async")
    short = {f"{{{i}}}": ids[i][:12] for i in range(10)}
    for key, value in {"{0}": ids[0], "{9}": ids[9]}.items():
        good, bad = good.replace(key, value), bad.replace(key, value)
    result = bisect(cli, "m/fake/async.yaml", "--good", good, "--bad", bad, "--miles-root", str(root))
    assert result.code == 2, result.err
    expected = message.replace("{root}", str(root))
    for key, value in short.items():
        expected = expected.replace(key, value)
    assert expected in result.err
    assert "\x1b" not in result.err


def test_a_good_commit_off_the_first_parent_line_is_refused(cli, specs, tmp_path):
    root = tmp_path / "merged"
    ids = history.build(root)
    history.git(root, "checkout", "--quiet", "-b", "topic", ids[2])
    history.git(root, "commit", "--quiet", "--allow-empty", "-m", "on the topic")
    topic = history.git(root, "rev-parse", "HEAD")
    history.git(root, "checkout", "--quiet", "main")
    history.git(root, "merge", "--quiet", "--no-ff", "-m", "Merge pull request #20 from topic", "topic")
    specs("async")
    result = bisect(cli, "m/fake/async.yaml", "--good", topic, "--bad", "main", "--miles-root", str(root))
    assert result.code == 2, result.err
    assert f"--good {topic[:12]} is not on the first-parent history of --bad" in result.err


def test_a_checkout_that_is_not_git_and_unknown_resume_ids_are_refused(cli, specs, miles, tmp_path):
    root, ids = miles
    specs("async")
    plain = tmp_path / "plain"
    plain.mkdir()
    result = bisect(cli, "m/fake/async.yaml", "--good", "a", "--bad", "b", "--miles-root", str(plain))
    assert (result.code, result.err) == (3, f"run-matrix: the miles checkout {plain} is not a git checkout: "
                                            f"{plain} has no .git\n")  # fmt: skip
    result = bisect(cli, "--resume", "0123456789ab", "--miles-root", str(root))
    assert result.code == 2
    assert "--resume 0123456789ab: no such bisection in the history store h.sqlite" in result.err
    result = bisect(cli, "--resume", "../../etc", "--miles-root", str(root))
    assert result.code == 2
    assert "--resume '../../etc': a bisection id is 12 hex digits" in result.err
    for argv, message in (
        (("m/fake/async.yaml", "--good", ids[0]), "bisect: give CELL --good REV --bad REV, or --resume ID"),
        (
            ("m/fake/async.yaml", "--good", ids[0], "--bad", "main", "--retries", "0"),
            "--retries 0: the attempts",
        ),
        (
            ("m/fake/async.yaml", "--good", ids[0], "--bad", "main", "--max-runs", "0"),
            "--max-runs 0: a number",
        ),
    ):
        result = bisect(cli, *argv, "--miles-root", str(root))
        assert result.code == 2 and message in result.err, result.err


def test_an_end_the_environment_cannot_run_is_exit_3_and_recorded(cli, specs, miles, history_url):
    root, ids = miles
    specs("async")
    store = history_url  # SQLite, and a real PostgreSQL where there is one
    argv = ("m/fake/async.yaml", "--good", ids[2], "--bad", ids[history.ENV], "--miles-root", str(root))
    result = cli(
        "bisect", *argv, "--ray-address", "http://127.0.0.1:9", "--history", str(store), "--format", "json"
    )
    assert result.code == 3, result.err
    answer = json.loads(result.out)
    assert answer["ends_wrong"] == "the bad commit is not runnable here (the environment failed twice)"
    assert answer["runs"] == 2
    (bad,) = [c for c in answer["commits"] if c["commit"] == ids[history.ENV]]
    assert bad["outcomes"] == ["env", "env"] and "attempt 1: env (" in bad["reasons"][0]
    shown = json.loads(cli("history", "fake/async", "--history", str(store), "--format", "json").out)
    assert [(r["status"], r["bisection"]) for r in shown["cells"][0]["runs"]] == [
        ("error", answer["bisection"])
    ] * 2


def test_an_end_where_the_spec_does_not_validate_is_exit_2_before_any_run(cli, specs, miles, tmp_path):
    root, ids = miles
    specs("async")
    argv = ("m/fake/async.yaml", "--good", ids[2], "--bad", ids[history.INVALID], "--miles-root", str(root))
    result = cli("bisect", *argv, "--history", str(tmp_path / "h.sqlite"))
    assert result.code == 2, result.err
    lines = result.out.splitlines()
    assert lines[0].endswith(": 0 runs (bound 15)")
    assert lines[1] == "nothing to bisect: the bad commit is one where the spec does not validate"
    assert lines[2].startswith(f"  {ids[history.INVALID][:12]}: the spec does not validate here: --")
    planned = cli("bisect", *argv, "--dry-run")
    assert planned.code == 0
    assert planned.out.splitlines()[-1].startswith(
        "expected: 12 runs (3 a commit; skips add to it), GPU-hours unknown: the spec does not validate at the bad"
    )


def test_a_spec_of_several_cells_must_be_named_by_one_cell_id(cli, specs, miles, monkeypatch):
    root, ids = miles
    path = specs("async")
    path.write_text(path.read_text().replace("matrix: !delete\n", ""))
    result = cli(
        "bisect",
        "m/fake/async.yaml",
        "--good",
        ids[0],
        "--bad",
        "main",
        "--miles-root",
        str(root),
        "--dry-run",
    )
    assert result.code == 2
    assert (
        "bisect m/fake/async.yaml: 2 cells (fake/async, fake/async[fp8_rollout=true]): name one" in result.err
    )
