"""Selection by change (issue 43): ``ci plan``/``list``/``run`` ``--changed``/``--since``, and
``ci plan --budget-gpu-hours``, on the shipped matrices and on real git repositories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from runner import pipeline
from tests.conftest import ROOT, Result

RUNNERS = """\
runners:
  - {label: h200-8, hardware: h200, gpus: 8, count: 2}
  - {label: h100-8, hardware: h100, gpus: 8, count: 1}
  - {label: mi355x-8, hardware: mi355x, gpus: 8, count: 1}
  - {label: mi350x-8, hardware: mi350x, gpus: 8, count: 1}
"""
GLM5 = {
    "nv/glm5-colocate",
    "nv/glm5-colocate[fp8_rollout=true]",
    "nv/glm5-main-ci",
    "nv/glm5-main",
    "nv/glm5-main[fp8_rollout=true]",
    "rocm/glm5-async",
    "rocm/glm5-async[fp8_rollout=true]",
}
Cli = Callable[..., Result]


@pytest.fixture
def runners(tmp_path: Path) -> Path:
    path = tmp_path / "runners.yaml"
    path.write_text(RUNNERS)
    return path


@pytest.fixture(scope="module")
def every() -> set[str]:
    return {c.id for c in pipeline.select([str(ROOT / "matrices")]) if not c.skip and not c.spec.ci.nightly}


def planned(cli: Cli, runners: Path, *options: str) -> set[str]:
    done = cli("ci", "plan", "matrices", "--runners", str(runners), "--format", "json", *options)
    assert done.code == 0, done.err
    return {c["id"] for c in json.loads(done.out)["cells"]}


def test_a_base_spec_selects_the_cells_that_extend_it(in_repo: Path, cli: Cli, runners: Path) -> None:
    done = cli("ci", "plan", "matrices", "--runners", str(runners), "--format", "json", "--changed",
               "matrices/base/glm5-744b-a40b-4layer.yaml")  # fmt: skip
    plan = json.loads(done.out)
    assert {c["id"] for c in plan["cells"]} == GLM5
    assert all(c["changed"] == ["matrices/base/glm5-744b-a40b-4layer.yaml (extends)"] for c in plan["cells"])


def test_a_hardware_profile_selects_its_cells_and_a_family_its_members(
    in_repo: Path, cli: Cli, runners: Path, every: set[str]
) -> None:
    h200 = {c.id for c in pipeline.select(["matrices"]) if c.profile.name == "h200"} & every
    assert planned(cli, runners, "--changed", "matrices/hardware/h200.yaml") == h200
    amd = planned(cli, runners, "--changed", "matrices/hardware/families/amd-instinct.yaml")
    assert amd and amd < every and all("rocm" in c or "platform=rocm" in c for c in amd)


def test_a_checkout_preset_selects_its_model_a_core_file_all_a_readme_none(
    in_repo: Path, cli: Cli, runners: Path, every: set[str], tmp_path: Path
) -> None:
    checkout = tmp_path / "miles"
    (checkout / "miles" / "utils").mkdir(parents=True)
    root = ("--miles-root", str(checkout))
    qwen = planned(cli, runners, *root, "--changed", "scripts/models/qwen3-30B-A3B.py")
    assert qwen and qwen < every and all(c.startswith("qwen3-30b-a3b/") for c in qwen)
    assert planned(cli, runners, *root, "--changed", "miles/utils/arguments.py") == every
    assert planned(cli, runners, *root, "--changed", str(checkout / "miles" / "utils" / "x.py")) == every
    done = cli("ci", "plan", "matrices", "--runners", str(runners), *root, "--changed", "README.md")
    assert (done.code, done.out.strip()) == (0, '{"include":[]}')
    markdown = cli("ci", "plan", "--runners", str(runners), "--format", "markdown", "--changed", "README.md")
    assert "## CI plan: 0 cells" in markdown.out and "GPU-hours: 0.0," in markdown.out


def test_the_reason_names_the_preset_and_the_markdown_shows_it(
    in_repo: Path, cli: Cli, runners: Path, tmp_path: Path
) -> None:
    done = cli("ci", "plan", "qwen3-30b-a3b/baseline.yaml", "--runners", str(runners), "--format",
               "markdown", "--miles-root", str(tmp_path), "--changed", "scripts/models/qwen3-30B-A3B.py")  # fmt: skip
    assert done.code == 0, done.err
    assert "| `qwen3-30b-a3b/baseline` | scripts/models/qwen3-30B-A3B.py (model preset) |" in done.out


def test_list_and_run_select_as_ci_plan_does(in_repo: Path, cli: Cli, runners: Path) -> None:
    change = ("--changed", "matrices/hardware/mi355x.yaml")
    listed = cli("list", "--format", "json", *change)
    assert listed.code == 0, listed.err
    rows = json.loads(listed.out)["cells"]
    assert all(row["changed"] == ["matrices/hardware/mi355x.yaml (hardware profile)"] for row in rows)
    assert {row["id"] for row in rows} == planned(cli, runners, *change)
    ran = cli("run", "matrices", "--dry-run", "--changed", "README.md")
    assert "rocm/glm5-async" not in ran.out and "Traceback" not in ran.err


def test_the_budget_refuses_the_shipped_matrix(in_repo: Path, cli: Cli, runners: Path) -> None:
    done = cli(
        "ci", "plan", "matrices", "--runners", str(runners), "--budget-gpu-hours", "1", "--format", "json"
    )
    plan = json.loads(done.out)
    assert done.code == 1 and plan["gpu_hours"] > 1 and plan["budget_gpu_hours"] == 1
    assert f"the plan needs {plan['gpu_hours']:.1f} GPU-hours, over --budget-gpu-hours 1; largest: " in done.err
    biggest = max(plan["cells"], key=lambda c: c["gpu_hours"])
    assert biggest["gpu_hours"] == pytest.approx(
        biggest["est_time"] * biggest["gpus"] * biggest["attempts"] / 3600, abs=1e-4
    )
    assert biggest["id"] in done.err
    enough = cli("ci", "plan", "matrices", "--runners", str(runners), "--budget-gpu-hours", "100000")
    assert enough.code == 0
    assert cli("ci", "plan", "--runners", str(runners), "--budget-gpu-hours", "-1").code == 2


@pytest.mark.allow_subprocess  # the hardened git, asked for HEAD's commit before the ref
@pytest.mark.parametrize(
    ("options", "said"),
    [
        (("--changed", "/etc/passwd"), "--changed '/etc/passwd': not a file of the spec repository"),
        (("--changed", "../../outside.yaml"), "not a file of the spec repository"),
        (("--changed", "a\x1b[31mb"), "not a path (empty, control characters or too long)"),
        (("--since", "no-such-branch-43"), "--since 'no-such-branch-43': "),
        (("--since=--output=/tmp/x",), "--since '--output=/tmp/x': "),
        (("--since", "HEAD~1"), "not a commit id (40 hex digits) or a ref name git accepts"),
        (("--since", "a..b"), "not a commit id"),
        (("--since", "x\x1b]0;pwned\x07"), "not a commit id"),
        (("--since", "@{-1}"), "not a commit id"),
    ],
)
def test_bad_changes_are_exit_2_with_the_reason(
    in_repo: Path, cli: Cli, runners: Path, options: tuple[str, ...], said: str
) -> None:
    done = cli("ci", "plan", "matrices", "--runners", str(runners), *options)
    assert done.code == 2 and said in done.err and "Traceback" not in done.err
    assert "\x1b" not in done.err


def test_since_outside_a_git_repository_is_exit_3(
    tmp_path: Path, cli: Cli, runners: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(ROOT / "matrices", tmp_path / "repo" / "matrices")
    monkeypatch.chdir(tmp_path / "repo")
    done = cli("ci", "plan", "matrices", "--runners", str(runners), "--since", "main")
    assert done.code == 3 and "is not a git repository (it has no .git)" in done.err


def _git(repo: Path, *args: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.mark.allow_subprocess
def test_since_reads_a_spec_repository_whose_config_runs_nothing(
    tmp_path: Path, cli: Cli, runners: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "matrices", repo / "matrices")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "specs")
    _git(repo, "checkout", "-qb", "change")
    profile = repo / "matrices" / "hardware" / "mi355x.yaml"
    profile.write_text(profile.read_text() + "# a touch\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "touch mi355x")
    pwned = tmp_path / "PWNED"
    with (repo / ".git" / "config").open("a") as config:  # what a hostile config would run
        config.write(f"[core]\n\tfsmonitor = touch {pwned}\n\tpager = touch {pwned}\n"
                     f"[diff]\n\texternal = touch {pwned}\n")  # fmt: skip
    monkeypatch.chdir(repo)
    done = cli("ci", "plan", "matrices", "--runners", str(runners), "--format", "json", "--since", "main")
    assert done.code == 0, done.err
    plan = json.loads(done.out)
    assert {c["id"] for c in plan["cells"]} == {"rocm/glm5-async", "rocm/glm5-async[fp8_rollout=true]"}
    assert plan["cells"][0]["changed"] == ["matrices/hardware/mi355x.yaml (hardware profile)"]
    assert not pwned.exists()
    unknown = cli("ci", "plan", "matrices", "--runners", str(runners), "--since", "v9.9")
    assert unknown.code == 2 and "has no such commit, branch or tag" in unknown.err
