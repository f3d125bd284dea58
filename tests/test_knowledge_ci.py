"""What run-matrix knows of miles' CI per platform: read from workflows, Dockerfiles and run_suite.py as
data, shipped per miles version, and equal to what the real upstream trees say."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from runner.knowledge import ci_images, ci_platforms, ci_sources
from runner.knowledge.checkout import Tree
from runner.knowledge.ci_images import Setting
from runner.knowledge.ci_sources import Suite

ROCM_WORKFLOW = """\
on: {workflow_call: {}}
jobs:
  run:
    runs-on: ${{ fromJSON(inputs.runs_on) }}
    env:
      PYTHONPATH: ${{ github.workspace }}
      MILES_HARDWARE_PLATFORM: rocm
      GITHUB_COMMIT_NAME: ${{ github.sha }}_x
      WANDB_API_KEY: ${{ secrets.WANDB_API_KEY }}
"""
CALLER = """\
jobs:
  stage-c-4-gpu-mi350:
    uses: ./.github/workflows/_run-ci-rocm.yml
    with:
      runs_on: '["self-hosted", "amd", "mi350", "4gpu"]'
      execute_command: python tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350
  all:
    strategy: {matrix: {suite: [stage-c-a-8-gpu, stage-c-b-8-gpu]}}
    uses: ./.github/workflows/_run-ci.yml
    with:
      gpu_count: 8
      execute_command: "python tests/ci/run_suite.py --hw cuda --suite ${{ matrix.suite }}"
"""


def read(files: dict[str, str]) -> ci_sources.CISources:
    return ci_sources.read(sorted(files), files.get)


def test_a_platform_env_maps_the_workspace_and_never_guesses_a_secret_or_an_expression():
    found = read({".github/workflows/_run-ci-rocm.yml": ROCM_WORKFLOW, ".github/workflows/pr.yml": CALLER})
    assert found.platforms["rocm"].env == {
        "PYTHONPATH": Setting("${MILES_ROOT}", ".github/workflows/_run-ci-rocm.yml:6"),
        "MILES_HARDWARE_PLATFORM": Setting("rocm", ".github/workflows/_run-ci-rocm.yml:7"),
        "GITHUB_COMMIT_NAME": Setting(
            None,
            ".github/workflows/_run-ci-rocm.yml:8",
            "a GitHub expression (${{ github.sha }}), known only to the CI run",
        ),
        "WANDB_API_KEY": Setting(
            None,
            ".github/workflows/_run-ci-rocm.yml:9",
            "a secret of the repository (${{ secrets.WANDB_API_KEY }}), known only to the CI run",
        ),
    }
    knowledge = ci_platforms.from_sources(found, "test")
    assert list(knowledge.environment("rocm", frozenset({"WANDB_API_KEY"}))) == ["MILES_HARDWARE_PLATFORM"]


def test_suites_get_runner_labels_gpu_model_and_count_or_a_matrix_and_gpu_count():
    found = read({".github/workflows/_run-ci-rocm.yml": ROCM_WORKFLOW, ".github/workflows/pr.yml": CALLER})
    assert found.suites["stage-c-4-gpu-mi350"] == Suite(
        "rocm", "mi350", 4, ".github/workflows/pr.yml:5", ("self-hosted", "amd", "mi350", "4gpu")
    )
    assert found.suites["stage-c-b-8-gpu"] == Suite("cuda", None, 8, ".github/workflows/pr.yml:11")
    assert ci_sources.as_data(found)["suites"]["stage-c-b-8-gpu"]["note"] == ci_sources.NO_MODEL


def test_suites_only_run_suite_lists_get_hardware_from_their_name_and_say_so():
    run_suite = 'CI_SUITES = {\n    HWBackend.ROCM: [\n        "nightly-stage-c-8-gpu-mi350",\n    ],\n}\n'
    found = read({"tests/ci/run_suite.py": run_suite})
    assert found.suites == {
        "nightly-stage-c-8-gpu-mi350": Suite(
            "rocm",
            "mi350",
            8,
            "tests/ci/run_suite.py:3",
            note="no workflow of the checkout runs this suite; its hardware and GPUs are read from its name",
        )
    }


def test_dockerfile_env_fills_args_of_its_last_stage_and_lists_what_it_cannot():
    text = textwrap.dedent(
        """\
        ARG TAG=1
        FROM base:${TAG} AS build
        ENV EARLY=lost
        ARG TAG
        FROM build
        ARG TAG
        ARG ARCH=gfx950
        # a comment
        ENV ARCH_LIST=${ARCH} \\
            TAGGED=v$TAG
        ENV LEGACY one two
        ENV PATH="/opt/bin:${PATH}"
        """
    )
    problems: list = []
    assert ci_images.dockerfile_env("docker/Dockerfile.rocm", text, problems) == {
        "ARCH_LIST": Setting("gfx950", "docker/Dockerfile.rocm:9"),
        "TAGGED": Setting("v1", "docker/Dockerfile.rocm:9"),
        "LEGACY": Setting("one two", "docker/Dockerfile.rocm:11"),
        "PATH": Setting(
            None, "docker/Dockerfile.rocm:12", "names ${PATH}, which the Dockerfile does not set"
        ),
    }
    assert problems == []


def test_files_that_do_not_parse_are_problems_at_their_line_and_the_others_are_read():
    found = read(
        {
            ".github/workflows/a.yml": "jobs:\n  x: [\n",
            ".github/workflows/b.yml": CALLER.replace('\'["self-hosted"', "'[self-hosted"),
            ".github/workflows/_run-ci.yml": "jobs: {run: {env: {A: '1'}}}\n",
            "docker/Dockerfile.rocm": 'FROM x\nENV A="open\nENV B=2\n',
            "tests/ci/run_suite.py": "CI_SUITES = {\n",
        }
    )
    assert [str(p) for p in found.problems] == [
        ".github/workflows/a.yml:3: error [ci-sources]: .github/workflows/a.yml does not parse as YAML:"
        " expected the node content, but found '<stream end>'",
        '.github/workflows/b.yml:5: error [ci-sources]: runs_on \'[self-hosted, "amd", "mi350", "4gpu"]\''
        " is not a list of runner labels",
        "docker/Dockerfile.rocm:2: error [ci-sources]: docker/Dockerfile.rocm: ENV 'A=\"open': No closing quotation",
        "tests/ci/run_suite.py: error [ci-sources]: tests/ci/run_suite.py does not parse: '{' was never closed"
        " (<unknown>, line 1)",
    ]
    assert found.platforms["cuda"].env == {"A": Setting("1", ".github/workflows/_run-ci.yml:1")}
    assert found.platforms["rocm"].env == {"B": Setting("2", "docker/Dockerfile.rocm:3")}


def test_a_workflow_of_aliases_is_read_within_its_bound():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    found = read({".github/workflows/bomb.yml": bomb + "jobs: {}\n"})
    assert found.suites == {} and found.problems == []


def test_a_checkout_file_outside_the_tree_or_too_big_is_not_read(tmp_path):
    root = tmp_path / "miles"
    (root / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / "secret.yml").write_text("jobs: {run: {env: {TOKEN: x}}}\n")
    (root / ".github/workflows/_run-ci.yml").symlink_to(tmp_path / "secret.yml")
    (root / ".github/workflows/big.yml").write_text("#" * (ci_platforms.MAX_FILE_BYTES + 1))
    assert ci_platforms.read_text(Tree.at(root), ".github/workflows/_run-ci.yml") is None
    assert ci_platforms.read_text(Tree.at(root), ".github/workflows/big.yml") == ci_sources.Unread(
        f"over the budget of {ci_platforms.MAX_FILE_BYTES} bytes for a CI file: not read"
    )
    assert ci_platforms.of_checkout(root).platforms == {}


def test_the_shipped_knowledge_is_what_the_upstream_trees_say(upstream_miles):
    for shipped in ci_platforms.shipped():
        tree = upstream_miles(shipped.commit)
        data = yaml.safe_load(shipped.path.read_text(encoding="utf-8"))
        assert data["miles_commit"].startswith(shipped.commit)
        assert ci_sources.as_data(ci_platforms._read(Tree.at(tree))) == {
            k: v for k, v in data.items() if k != "miles_commit"
        }


def test_the_shipped_knowledge_of_miles_main_sets_the_rocm_platform_and_runs_mi350_on_4_gpus():
    main = ci_platforms.for_version("31f1ca96")
    assert main.environment("rocm")["MILES_HARDWARE_PLATFORM"] == Setting(
        "rocm", ".github/workflows/_run-ci-rocm.yml:68"
    )
    assert "MILES_HARDWARE_PLATFORM" not in main.environment("cuda")
    suite = main.suite("stage-c-4-gpu-mi350")
    assert suite is not None and (suite.platform, suite.hardware, suite.gpus) == ("rocm", "mi350", 4)


def committed(tmp_path: Path) -> Path:
    """A miles checkout of two workflows, one commit of 2026-01-02, readable by the sandbox's user."""
    root = tmp_path / "miles"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github/workflows/_run-ci-rocm.yml").write_text(ROCM_WORKFLOW)
    (root / ".github/workflows/pr.yml").write_text(CALLER)
    tmp_path.chmod(0o755)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run(
        [*git, "commit", "-qm", "x"], check=True, env={"GIT_COMMITTER_DATE": "2026-01-02T00:00:00"}
    )
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


@pytest.mark.allow_subprocess
def test_ci_sync_writes_a_file_per_commit_and_check_reports_drift(cli, tmp_path):
    root = committed(tmp_path)
    out = tmp_path / "ci"
    written = cli("ci", "sync", "--miles-root", str(root), "-o", str(out))
    assert written.code == 0, written.err
    (shipped,) = out.glob("2026-01-02-*.yaml")
    assert yaml.safe_load(shipped.read_text())["platforms"]["rocm"]["env"]["MILES_HARDWARE_PLATFORM"] == {
        "value": "rocm",
        "source": ".github/workflows/_run-ci-rocm.yml:7",
    }
    assert cli("ci", "sync", "--miles-root", str(root), "-o", str(out), "--check").code == 0
    (root / ".github/workflows/_run-ci-rocm.yml").write_text(ROCM_WORKFLOW.replace("rocm\n", "hip\n"))
    drift = cli("ci", "sync", "--miles-root", str(root), "-o", str(out), "--check")
    assert (drift.code, drift.out.strip()) == (1, f"{shipped}: differs from the checkout")


@pytest.mark.allow_subprocess
def test_ci_sync_on_a_workflow_nested_100000_deep_is_a_problem_not_a_traceback(cli, tmp_path):
    root = tmp_path / "miles"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github/workflows/x.yml").write_text("x: " + "[" * 100_000 + "]" * 100_000 + "\n")
    tmp_path.chmod(0o755)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run(
        [*git, "commit", "-qm", "x"], check=True, env={"GIT_COMMITTER_DATE": "2026-01-02T00:00:00"}
    )
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    synced = cli("ci", "sync", "--miles-root", str(root), "-o", str(tmp_path / "ci"))
    (written,) = (tmp_path / "ci").glob("2026-01-02-*.yaml")
    assert (synced.code, synced.out, synced.err) == (
        0,
        f"{written}: written\n",
        "run-matrix: .github/workflows/x.yml:1: error [ci-sources]: .github/workflows/x.yml does not parse"
        " as YAML: nests deeper than 100 levels\n",
    )


def test_a_recording_is_never_given_a_name_or_value_a_process_environment_cannot_hold():
    workflow = 'jobs: {run: {env: {"A=B": x, "ok": "fine", "NUL": "a\\0b", "PATH": /evil, "HOME": /root, "RUN_MATRIX_OUT": /etc, "RUN_MATRIX_RECORDED_CALLS": "[]"}}}\n'
    found = read({".github/workflows/_run-ci.yml": workflow, ".github/workflows/pr.yml": CALLER})
    knowledge = ci_platforms.from_sources(found, "test")
    assert {name: s.value for name, s in knowledge.environment("cuda").items()} == {"ok": "fine"}


def test_a_workflow_over_the_budget_says_so_and_a_link_or_fifo_is_named_as_skipped(tmp_path):
    root = tmp_path / "miles"
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (tmp_path / "secret.yml").write_text("jobs: {run: {env: {TOKEN: x}}}\n")
    (workflows / "out.yml").symlink_to(tmp_path / "secret.yml")
    (workflows / "gone.yml").symlink_to(workflows / "nothing.yml")
    os.mkfifo(workflows / "fifo.yml")
    (workflows / "notes.txt").symlink_to(tmp_path / "secret.yml")  # no workflow: not named
    (workflows / "big.yml").write_text("#" * (ci_platforms.MAX_FILE_BYTES + 1))
    (workflows / "pr.yml").write_text(CALLER.replace("_run-ci-rocm.yml", "big.yml"))
    link = "a link that leads out of the checkout or to no file in it: skipped"
    big = f"over the budget of {ci_platforms.MAX_FILE_BYTES} bytes for a CI file: not read"
    found = ci_platforms.of_checkout(root).problems
    assert [(p.message, p.locations) for p in found] == [
        (f".github/workflows/{name}: {why}", ci_images.at(f".github/workflows/{name}"))
        for name, why in [
            ("fifo.yml", "a FIFO, not a regular file: skipped"),
            ("gone.yml", link),
            ("out.yml", link),
            ("big.yml", big),  # once, though a listed workflow and the reusable one of a suite
            ("_run-ci.yml", "no such file in the checkout"),
        ]
    ]


@pytest.mark.allow_subprocess
def test_ci_sync_names_a_skipped_workflow_on_stderr_with_its_escape_codes_escaped(cli, tmp_path):
    root = committed(tmp_path)
    os.mkfifo(root / ".github/workflows/\x1b]0;TITLE\x07.yml")
    written = cli("ci", "sync", "--miles-root", str(root), "-o", str(tmp_path / "ci"))
    assert (written.code, written.err) == (
        0,
        "run-matrix: .github/workflows/\\x1b]0;TITLE\\x07.yml: error [ci-sources]:"
        " .github/workflows/\\x1b]0;TITLE\\x07.yml: a FIFO, not a regular file: skipped\n"
        "run-matrix: .github/workflows/_run-ci.yml: error [ci-sources]: .github/workflows/_run-ci.yml: no such"
        " file in the checkout\n",
    )


def test_a_suite_name_or_runner_label_that_is_no_name_is_said_and_skipped():
    hostile = CALLER.replace('"4gpu"]', '"4gpu", "x\\u001b]0;T\\u0007"]').replace(
        "[stage-c-a-8-gpu, stage-c-b-8-gpu]", "[stage-c-a-8-gpu, 'b$(touch /tmp/x)', '${env:HOME}']"
    )
    found = read({".github/workflows/_run-ci-rocm.yml": ROCM_WORKFLOW, ".github/workflows/pr.yml": hostile})
    assert sorted(found.suites) == ["stage-c-4-gpu-mi350", "stage-c-a-8-gpu"]
    assert found.suites["stage-c-4-gpu-mi350"].runs_on == ("self-hosted", "amd", "mi350", "4gpu")
    assert [p.message for p in found.problems] == [
        "'x\\x1b]0;T\\x07' is not a runner label: skipped",
        "'b$(touch /tmp/x)' is not a suite's name: skipped",
        "'${env:HOME}' is not a suite's name: skipped",
        ".github/workflows/_run-ci.yml: no such file in the checkout",  # the CUDA workflow is not given here
    ]
