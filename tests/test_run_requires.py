from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner import pipeline
from runner.results.outcome import RequirementResult
from runner.run.requires import check, unmet
from tests.test_model import VALID


def results(write, requires: str, miles_root: Path | None = None, env: dict[str, str] | None = None):
    cell = pipeline.cell(write("spec.yaml", VALID + "requires:\n" + requires))
    return check(cell, miles_root, env or {})


def test_packages(write):
    found = results(
        write,
        """
  new: {kind: package, name: pydantic, min_version: "2.0"}
  old: {kind: package, name: pydantic, min_version: "99"}
  absent: {kind: package, name: run-matrix-no-such-package}
  any: {kind: package, name: PyYAML}
""",
    )
    assert [(r.name, r.met) for r in found] == [
        ("new", True),
        ("old", False),
        ("absent", False),
        ("any", True),
    ]
    assert found[1].detail.startswith("pydantic 2.") and found[1].detail.endswith(" < 99")
    assert found[2].detail == "run-matrix-no-such-package is not installed"


def test_files_and_environment(write, tmp_path):
    (tmp_path / "marker.txt").write_text("the clamp is here\n")
    found = results(
        write,
        f"""
  file: {{kind: file, path: {tmp_path}/marker.txt, contains: clamp}}
  text: {{kind: file, path: {tmp_path}/marker.txt, contains: retuning}}
  gone: {{kind: file, path: {tmp_path}/none}}
  set: {{kind: env, name: HOME}}
  value: {{kind: env, name: TOKEN, value: "1"}}
""",
        env={"HOME": "/root", "TOKEN": "secret-value"},
    )
    assert [(r.met, r.detail) for r in found] == [
        (True, f"{tmp_path}/marker.txt contains 'clamp'"),
        (False, f"{tmp_path}/marker.txt does not contain 'retuning'"),
        (False, f"{tmp_path}/none does not exist"),
        (True, "$HOME is set"),
        (False, "$TOKEN is not '1'"),
    ]


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A miles-like checkout: main has one commit; branch fix/clamp has one more."""
    repo = tmp_path / "miles"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    git(repo, "checkout", "-q", "-b", "fix/clamp")
    git(repo, "commit", "-q", "--allow-empty", "-m", "the fix")
    git(repo, "checkout", "-q", "main")
    return repo


@pytest.mark.allow_subprocess
def test_git_requirements(write, checkout):
    fix = git(checkout, "rev-parse", "fix/clamp")
    requires = """
  clamp: {kind: git, contains: fix/clamp}
  base: {kind: git, contains: main}
  unknown: {kind: git, contains: fix/other}
"""
    found = results(write, requires, checkout)
    assert [(r.met, r.detail) for r in found] == [
        (False, f"the miles checkout {checkout} does not contain fix/clamp ({fix[:12]})"),
        (True, f"the miles checkout {checkout} contains main ({git(checkout, 'rev-parse', 'main')[:12]})"),
        (
            False,
            f"the miles checkout {checkout} does not know fix/other: fetch it (git fetch origin fix/other)",
        ),
    ]
    git(checkout, "merge", "-q", "--ff-only", "fix/clamp")
    assert results(write, requires, checkout)[0].met


@pytest.mark.allow_subprocess
def test_git_needs_a_checkout(write, tmp_path):
    found = results(write, "  clamp: {kind: git, contains: fix/clamp}\n", tmp_path)
    assert (
        found[0].detail
        == f"the miles checkout {tmp_path} is not a git checkout, so fix/clamp cannot be checked"
    )
    found = results(write, "  clamp: {kind: git, contains: fix/clamp}\n", None)
    assert found[0].detail == "fix/clamp cannot be checked: no miles checkout (--miles-root or MILES_ROOT)"


def test_the_reason_is_the_specs_why_and_optional_ones_do_not_skip(write):
    found = results(
        write,
        """
  te: {kind: package, name: run-matrix-no-such-package, optional: true}
  sg: {kind: package, name: run-matrix-no-such-package}
why:
  requires.sg: the NSA kernels
""",
    )
    assert found == (
        RequirementResult("te", "package", False, True, "run-matrix-no-such-package is not installed", ""),
        RequirementResult(
            "sg", "package", False, False, "run-matrix-no-such-package is not installed", "the NSA kernels"
        ),
    )
    assert [r.describe() for r in unmet(found)] == [
        "requires.sg: run-matrix-no-such-package is not installed (the NSA kernels)"
    ]
