"""recorder: which runs are trusted, and the miles commit read from a checkout's .git."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.results.history.location import parse
from runner.results.history.recorder import NO_RECORD, Recorder, miles_commit
from runner.results.history.store import Store
from runner.results.outcome import CellResult, Gate, Status

COMMIT = "31f1ca96" + "0" * 32


def result(status: Status, *verdicts: str, enforce: bool = True) -> CellResult:
    gates = tuple(Gate("m", -1, 2, 1.0, 1.0, 0.9, 1.1, 3, v, enforce, "") for v in verdicts)  # type: ignore[arg-type]
    return CellResult("c", status, "", "c.yaml", (), "h200", "abc", "run-matrix run c.yaml", gates=gates)


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    return Recorder(Store.open(parse(str(tmp_path / "h.sqlite"), "--history", from_command_line=True)))


@pytest.mark.parametrize(
    ("cell", "no_record", "trust"),
    [
        (result(Status.PASSED, "pass", "inactive"), False, (True, "")),
        (result(Status.PASSED, "pass"), True, (False, NO_RECORD)),
        (result(Status.FAILED, "fail"), False, (False, "failed")),
        (result(Status.XFAIL), False, (False, "xfail")),
        (
            result(Status.PASSED, "pass", "fail", enforce=False),
            False,
            (False, "m left its corridor (enforce: false)"),
        ),
    ],
)
def test_only_a_passed_run_whose_every_band_held_makes_baselines(recorder, cell, no_record, trust):
    recorder.no_record = no_record
    assert recorder.trust(cell) == trust


def write_git(root: Path, head: str, refs: dict[str, str], packed: str = "") -> None:
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text(head + "\n")
    for name, commit in refs.items():
        (git / name).write_text(commit + "\n")
    if packed:
        (git / "packed-refs").write_text(packed)


def test_the_miles_commit_is_read_from_git_without_running_it(tmp_path):
    write_git(tmp_path / "a", "ref: refs/heads/main", {"refs/heads/main": COMMIT})
    write_git(tmp_path / "b", "ref: refs/heads/pr", {}, f"# pack-refs with: peeled\n{COMMIT} refs/heads/pr\n")
    write_git(tmp_path / "c", COMMIT, {})  # detached
    assert [miles_commit(tmp_path / name) for name in "abc"] == [COMMIT] * 3
    assert miles_commit(tmp_path / "not-a-checkout") == ""
    assert miles_commit(None) == ""
