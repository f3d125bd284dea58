"""A CI plan run for real: each shard of a small plan through `run --shard-of` (and `--cells`) on a
real Ray cluster with the fake miles; together the shards run every cell once. Two of the runners
are 4-GPU shares, each with its own visible-devices mask in its environment, as a CI runner has."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import DATA
from tests.test_run_on_ray import users_cluster  # noqa: F401  (a module's own Ray cluster)

pytestmark = pytest.mark.allow_subprocess
pytest.importorskip("ray.job_submission")

MATRICES = Path(__file__).parents[1] / "matrices"
RUNNERS = """\
runners:
  - {label: [self-hosted, amd, mi350, 4gpu], hardware: mi350x, gpus: 4, count: 2}
  - {label: h200-8gpu, hardware: h200, gpus: 8, count: 1}
"""


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three async cells on a 4-GPU MI350X share (est_time 30, 20, 10 s) and one colocated on an H200."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{DATA / 'fake-bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MILES_ROOT", str(DATA / "fake-miles"))
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path / "state"))
    for name in (
        "RAY_ADDRESS",
        "RAY_API_SERVER_ADDRESS",
        "WANDB_API_KEY",
        "GITHUB_STEP_SUMMARY",
        "RUN_MATRIX_GPUS",
        "RUN_MATRIX_HISTORY_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    for name in ("NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "HIP_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "m" / "hardware").mkdir(parents=True)  # a matrices tree: cell ids are relative to it
    (tmp_path / "m" / "ci").mkdir()
    common = [
        f"vars: {{models: {tmp_path}/models, datasets: {tmp_path}/datasets, shared_data: {tmp_path}/shared}}",
        "retry: {infra: 1, delay_seconds: 0}",
    ]
    share = [
        f"extends: {MATRICES}/rocm/glm5-async.yaml",
        "hardware: mi350x",
        "cluster: {gpus_per_node: 4}",
        "requires: !delete",
        "matrix: {axes: {fp8_rollout: [false], est: [30, 20, 10]}}",
        "ci: {est_time: '${matrix.est}'}",
    ]
    host = [f"extends: {MATRICES}/nv/glm5-colocate.yaml", "matrix: !delete", "ci: {est_time: 15}"]
    (tmp_path / "m" / "ci" / "share.yaml").write_text("\n".join(share + common) + "\n")
    (tmp_path / "m" / "ci" / "host.yaml").write_text("\n".join(host + common) + "\n")
    (tmp_path / "runners.yaml").write_text(RUNNERS)
    return tmp_path


def test_the_shards_of_a_plan_together_run_every_cell_once(cli, tree, users_cluster, monkeypatch):  # noqa: F811
    planned = cli("ci", "plan", "m/ci", "--runners", "runners.yaml", "--format", "json", "--strict")
    assert planned.code == 0, planned.err
    Path("plan.json").write_text(planned.out)
    shards = json.loads(planned.out)["shards"]
    assert [(s["label"], s["cells"], s["load"]) for s in shards] == [
        ("self-hosted,amd,mi350,4gpu", ["ci/share"], 30),
        ("self-hosted,amd,mi350,4gpu", ["ci/share[est=20]", "ci/share[est=10]"], 30),
        ("h200-8gpu", ["ci/host"], 15),
    ]
    masks = {0: "0,1,2,3", 1: "4,5,6,7"}  # the two shares of one 8-GPU host
    ran: list[str] = []
    for shard in shards:
        number = shard["shard"]
        if number in masks:
            monkeypatch.setenv("HIP_VISIBLE_DEVICES", masks[number])
        else:
            monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
        argv = ["--shard-of", "plan.json", str(number)]
        result = cli(
            "run",
            *argv,
            "--ray-address",
            users_cluster.address,
            "--log-dir",
            f"logs-{number}",
            "--format",
            "json",
            "--keep-going",
            "--skip-prepare",
            "--history",
            "h.sqlite",
        )
        assert result.code == 0, result.err
        report = json.loads(result.out)
        assert [(c["id"], c["status"]) for c in report["cells"]] == [(c, "passed") for c in shard["cells"]]
        ran += [c["id"] for c in report["cells"]]
        assert os.environ.get("HIP_VISIBLE_DEVICES") == masks.get(number)  # the runner's mask, as it was
    assert sorted(ran) == sorted(c["id"] for c in json.loads(planned.out)["cells"])  # every cell, once
    assert users_cluster.alive()
    again = cli(
        "ci", "plan", "m/ci", "--runners", "runners.yaml", "--format", "json", "--history", "h.sqlite"
    )
    measured = {c["id"]: (c["est_source"], c["est_time"]) for c in json.loads(again.out)["cells"]}
    assert {source for source, _ in measured.values()} == {"history"}  # each run recorded its seconds
    assert all(1 <= seconds < 300 for _, seconds in measured.values())


def test_cells_of_a_github_matrix_entry_run(cli, tree, users_cluster):  # noqa: F811
    matrix = json.loads(cli("ci", "plan", "m/ci", "--runners", "runners.yaml").out)
    Path("shard.json").write_text(json.dumps(matrix["include"][1]))  # what toJSON(matrix) gives a run job
    result = cli(
        "run",
        "m/ci",
        "--cells",
        "shard.json",
        "--ray-address",
        users_cluster.address,
        "--log-dir",
        "logs",
        "--format",
        "json",
        "--skip-prepare",
        "--junit",
        "junit.xml",
    )
    assert result.code == 0, result.err
    assert [c["id"] for c in json.loads(result.out)["cells"]] == ["ci/share[est=20]", "ci/share[est=10]"]
    assert 'tests="2" errors="0" failures="0" skipped="0"' in Path("junit.xml").read_text()
