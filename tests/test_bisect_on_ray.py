"""`run-matrix bisect` for real: a real git history of the fake miles (tests/bisect_history.py), a real
Ray (one head for the module), the fake train script; the first bad commit is found past a flaky
commit, one where the environment fails and one where the spec does not validate, within the bound,
and an interrupted bisection goes on from the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import bisect_history as history
from tests import test_run_on_ray as on_ray

users_cluster = on_ray.users_cluster  # one Ray head for the module, as the run tests have
specs = on_ray.specs

pytestmark = pytest.mark.allow_subprocess


@pytest.fixture
def miles(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    root = tmp_path / "miles-history"
    return root, history.build(root)


def bisect(cli, *argv: str, address: str, store: Path) -> tuple[int, dict, str]:
    where = ("--ray-address", address, "--history", str(store), "--skip-prepare", "--log-dir", "logs")
    result = cli("bisect", *argv, *where, "--format", "json")
    return result.code, json.loads(result.out) if result.out else {}, result.err


def test_the_first_bad_commit_is_found_past_flaky_broken_and_invalid_commits_and_resumes(
    cli, specs, users_cluster, miles, tmp_path
):
    root, ids = miles
    specs("async", extra=f"env: {{{history.COUNTER_ENV}: {tmp_path}/counter}}")
    store = tmp_path / "history.sqlite"
    common = ("--miles-root", str(root))
    # interrupted after the two ends: the answer says where it stopped
    code, first, err = bisect(
        cli, "m/fake/async.yaml", "--good", ids[0][:10], "--bad", "main", "--max-runs", "5", *common,
        address=users_cluster.address, store=store,
    )  # fmt: skip
    assert code == 1, err
    assert first["stopped"] == "stopped after 5 runs (--max-runs 5)"
    assert first["runs"] == 5 and first["first_bad"] is None
    assert f"run-matrix: bisection {first['bisection']} started: m/fake/async.yaml, 9 commits" in err

    code, answer, err = bisect(
        cli, "--resume", first["bisection"], *common, address=users_cluster.address, store=store
    )
    assert code == 0, err
    assert f"run-matrix: bisection {first['bisection']} resumed" in err
    assert answer["first_bad"] == {"commit": ids[history.FIRST_BAD], "subject": history.SUBJECTS[7], "pr": 17}
    assert answer["parent"] == ids[history.FIRST_BAD - 1]
    verdicts = {c["commit"]: c["verdict"] for c in answer["commits"]}
    assert verdicts[ids[history.FLAKY]] == "flaky"
    assert verdicts[ids[history.ENV]] == "env"
    assert verdicts[ids[history.INVALID]] == "invalid"
    # the middle (4, 5), then nearest it (3, then 6), then the middle of what is left (7)
    assert [verdicts[ids[i]] for i in (0, 6, 7, 9)] == ["good", "good", "bad", "bad"]
    assert [verdicts[ids[i]] for i in (1, 2, 8)] == [None, None, None]
    outcomes = {c["commit"]: c["outcomes"] for c in answer["commits"]}
    assert outcomes[ids[history.FLAKY]] == ["fail", "pass", "pass", "pass", "fail"]
    assert outcomes[ids[history.ENV]] == ["env", "env"]
    assert outcomes[ids[history.FIRST_BAD]] == ["fail", "fail"]
    assert answer["runs"] == 17 <= answer["bound"]
    assert [d["key"] for d in answer["changed"]] == []  # the launch is the same: miles' code moved
    invalid = next(c for c in answer["commits"] if c["commit"] == ids[history.INVALID])
    assert invalid["reasons"][0].startswith("the spec does not validate here: --")

    shown = cli("history", "fake/async", "--history", str(store), "--format", "json", "--last", "100")
    assert shown.code == 0, shown.err
    (cell,) = json.loads(shown.out)["cells"]
    runs = cell["runs"]
    assert {run["bisection"] for run in runs} == {first["bisection"]}
    assert {run["miles_commit"] for run in runs} == {ids[i] for i in (0, 3, 4, 6, 7, 9)}
    assert not any(run["trusted"] for run in runs)  # an older miles is kept out of baselines
    page = tmp_path / "page.html"
    assert (
        cli("history", "fake/async", "--history", str(store), "--html", str(page), "--last", "100").code == 0
    )
    assert f"<td>{ids[history.FIRST_BAD][:12]} (bisection {first['bisection']})</td>" in page.read_text()
    site = tmp_path / "site"  # the results site lists the bisection's attempts on the cell's page
    built = cli("report", "m/fake/async.yaml", "--html", str(site), "--history", str(store), "--format", "json")
    assert built.code == 0, built.err
    (cell_page,) = [site / page for page in json.loads(built.out)["pages"] if "fake" in page and "async" in page]
    text = cell_page.read_text()
    assert f"bisection {first['bisection']}" in text and ids[history.FIRST_BAD][:12] in text


def test_the_answer_as_text_names_the_commit_its_attempts_and_its_parent(
    cli, specs, users_cluster, miles, tmp_path
):
    root, ids = miles
    specs("async")
    store = tmp_path / "history.sqlite"
    argv = ("m/fake/async.yaml", "--good", ids[6], "--bad", ids[8], "--miles-root", str(root))
    where = ("--ray-address", users_cluster.address, "--history", str(store), "--skip-prepare")
    result = cli("bisect", *argv, *where, "--retries", "2")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("bisection ") and lines[0].endswith(": 6 runs (bound 6)")
    assert lines[1] == f"first bad commit: {ids[7]} rollout: a new logprob path (#17) (PR #17)"
    assert lines[2].startswith("  attempt 1: fail (train/train_rollout_logprob_abs_diff is 0.5 at step 0")
    assert lines[4] == f"its parent: {ids[6]} restore the packaging (#16)"
    assert lines[5:7] == ["  attempt 1: pass", "  attempt 2: pass"]
    assert lines[7] == (
        "what changed in the launch: nothing (flags, env, preset, conventions alike): miles' code did"
    )
