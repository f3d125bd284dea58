"""A value read at launch, for real: on a local Ray, a save cell's fake train writes the step it saved,
and the load cell after it launches with that step as ``--ckpt-step`` (miles' checkpoint tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_run_on_ray import run, specs, users_cluster  # noqa: F401 (fixtures)

pytestmark = pytest.mark.allow_subprocess
ray_jobs = pytest.importorskip("ray.job_submission")

LOAD = """\
args:
  ckpt:
    load: {folder}
    ckpt-step: $${{read-integer:{folder}/latest_checkpointed_iteration.txt}}
    save: !delete
    save-interval: !delete
"""


def ckpt_spec(write_spec, tmp_path: Path) -> Path:
    """fake/ckpt: a save cell (--save, --save-interval 2, 3 rollouts), then a load cell reading its step."""
    folder = tmp_path / "ckpt"
    (tmp_path / "m" / "components").mkdir()
    (tmp_path / "m" / "components" / "load.yaml").write_text(LOAD.format(folder=folder))
    path = write_spec(
        "ckpt", base="nv/glm5-colocate", extra=f"args:\n  ckpt: {{save: {folder}, save-interval: 2}}"
    )
    matrix = (
        "matrix:\n  axes: {fp8_rollout: [false], mode: [save, load]}\n"
        "  adjust: {load: {match: {mode: load}, overlay: ../components/load.yaml}}"
    )
    path.write_text(path.read_text().replace("matrix: !delete", matrix))
    return folder


SAVE_CELL, LOAD_CELL = "fake/ckpt", "fake/ckpt[mode=load]"  # the first value of an axis is the default cell's


def test_the_load_cell_launches_with_the_step_the_save_cell_wrote(cli, specs, users_cluster, tmp_path):  # noqa: F811
    folder = ckpt_spec(specs, tmp_path)
    code, report, err = run(cli, "m/fake/ckpt.yaml", "--skip-prepare", address=users_cluster.address)
    assert code == 0, err
    saved, loaded = report["cells"]
    assert [(c["id"], c["status"]) for c in (saved, loaded)] == [(SAVE_CELL, "passed"), (LOAD_CELL, "passed")]
    # 3 rollouts, every 2nd saved and the last: rollout 1, then rollout 2, which the tracker names
    assert sorted(p.name for p in folder.iterdir()) == [
        "iter_0000001",
        "iter_0000002",
        "latest_checkpointed_iteration.txt",
    ]
    assert (folder / "latest_checkpointed_iteration.txt").read_text() == "2\n"
    latest = f"{folder}/latest_checkpointed_iteration.txt"
    assert saved["reads"] == []
    # the load cell runs after the save cell: the spec whole reproduces it, the save cell alone does
    assert (saved["reproduce"], loaded["reproduce"]) == (
        f"run-matrix run m/fake/ckpt.yaml -k {SAVE_CELL}",
        "run-matrix run m/fake/ckpt.yaml",
    )
    assert loaded["reads"] == [
        {"flag": "--ckpt-step", "path": latest, "value": "2", "reference": f"${{read-integer:{latest}}}"}
    ]
    log = (tmp_path / "logs" / "fake-ckpt-mode-load.log").read_text()
    assert f"==> read --ckpt-step 2 (from {latest})\n" in log
    assert log.index("==> read --ckpt-step 2") < log.index("==> attempt 1: job ")
    assert f"fake miles: --ckpt-step 2: loaded {folder}/iter_0000002\n" in log  # what the job received


def test_the_load_cell_selected_alone_fails_before_submitting_a_job(cli, specs, users_cluster, tmp_path):  # noqa: F811
    folder = ckpt_spec(specs, tmp_path)
    jobs = ray_jobs.JobSubmissionClient(users_cluster.address)
    before = {job.submission_id for job in jobs.list_jobs()}
    code, report, _ = run(
        cli, "m/fake/ckpt.yaml", "-k", LOAD_CELL, "--skip-prepare", address=users_cluster.address
    )
    (cell,) = report["cells"]
    latest = f"{folder}/latest_checkpointed_iteration.txt"
    why = (
        f"--ckpt-step reads {latest} at launch, which is missing: an earlier cell of the spec writes it"
        " (run the spec whole; a cell selected alone with -k has no earlier cell)"
    )
    assert (code, cell["id"], cell["status"], cell["reason"]) == (1, LOAD_CELL, "failed", why)
    (attempt,) = cell["attempts"]
    assert (attempt["outcome"], attempt["detail"]) == ("failed", why)
    assert (cell["reads"], report["clusters"]) == ([], [])  # no cluster was even reached
    assert {job.submission_id for job in jobs.list_jobs()} == before
    assert not folder.exists()
