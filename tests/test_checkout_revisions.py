"""The door's revisions (``runner/knowledge/checkout/revisions.py``): a commit's tree written out runs
nothing of the checkout's — no hook, no filter driver, no fsmonitor — and keeps its files as committed;
subjects and PR numbers; the first-parent range."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner.knowledge.checkout import revisions
from runner.knowledge.checkout.revisions import Commit

pytestmark = pytest.mark.allow_subprocess


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def test_writing_a_commit_s_tree_runs_no_hook_filter_or_fsmonitor_of_the_checkout(tmp_path):
    marker = tmp_path / "ran"
    repo = tmp_path / "miles"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("* filter=evil\n*.txt ident\n")
    (repo / "a.txt").write_text("as committed\n")
    (repo / "link").symlink_to("a.txt")
    git(repo, "add", ".")
    git(repo, "-c", "filter.evil.clean=cat", "commit", "-q", "-m", "base")
    run = f"sh -c 'id > {marker}'"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "evil"]\n\tsmudge = {run}\n\tprocess = {run}\n\trequired = true\n')
        config.write(f"[core]\n\tfsmonitor = {run}\n\thooksPath = {tmp_path}/hooks\n")
    (tmp_path / "hooks").mkdir()
    for hook in ("post-checkout", "post-index-change", "reference-transaction"):
        (tmp_path / "hooks" / hook).write_text(f"#!/bin/sh\nid > {marker}\n")
        (tmp_path / "hooks" / hook).chmod(0o755)
    tree = revisions.repository(repo)
    commit = revisions.commit(tree, "main", "--bad")
    into = tmp_path / "out"
    into.mkdir()
    revisions.write_tree(tree, commit, into)
    assert (into / "a.txt").read_text() == "as committed\n"  # no filter, no ident expansion driver
    assert (into / "link").is_symlink() and str((into / "link").readlink()) == "a.txt"
    assert not marker.exists()
    assert not (into / ".git").exists()


@pytest.mark.parametrize(
    ("subject", "pr"),
    [
        ("rollout: a new logprob path (#1234)", 1234),
        ("Merge pull request #88 from fork/branch", 88),
        ("no number here", None),
        ("refers to #12 in passing", None),
    ],
)
def test_the_pull_request_a_subject_names(subject, pr):
    assert Commit("0" * 40, subject).pull_request == pr


def test_the_range_is_the_first_parents_oldest_first(tmp_path):
    repo = tmp_path / "miles"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for subject in ("one", "two", "three"):
        git(repo, "commit", "-q", "--allow-empty", "-m", subject)
    ids = git(repo, "rev-list", "--reverse", "HEAD").split()
    tree = revisions.repository(repo)
    assert revisions.between(tree, ids[0], ids[2]) == tuple(ids)
    assert revisions.commit(tree, ids[1][:7], "--good") == ids[1]
    assert revisions.described(tree, ids[2]) == Commit(ids[2], "three")
