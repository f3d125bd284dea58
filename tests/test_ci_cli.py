"""run-matrix ci plan on the shipped matrices plus a generated 40-cell one; list, coverage and run
--cells / --shard-of (dry runs: tests/test_ci_on_ray.py runs shards for real)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT

MATRICES = ROOT / "matrices"
RUNNERS = """\
runners:
  - {label: [self-hosted, nvidia, h200, 8gpu], hardware: h200, gpus: 8, count: 3}
  - {label: [self-hosted, amd, mi350, 4gpu], hardware: mi350x, gpus: 4, count: 4, suites: [stage-c-4-gpu-mi350]}
  - {label: b200-8gpu, hardware: b200, gpus: 8, count: 2}
"""
MI355X = "  - {label: mi355x-8gpu, hardware: mi355x, gpus: 8, count: 1}\n"
H100 = "  - {label: h100-8gpu, hardware: h100, gpus: 8, count: 1}\n"  # the shipped qwen3-30b-a3b family
MI350_8 = "  - {label: mi350-8gpu, hardware: mi350x, gpus: 8, count: 1}\n"  # its AMD cells of 8 GPUs


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """40 generated cells: GLM-5 colocated on H200 and B200 (8 GPUs), async on MI350X 4- and 2-GPU
    shares."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_MATRIX_HISTORY_URL", raising=False)
    (tmp_path / "hardware").mkdir()  # a matrices tree: cell ids are relative to it
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "nv.yaml").write_text(
        f"extends: {MATRICES}/nv/glm5-colocate.yaml\nhardware: ${{matrix.hw}}\n"
        "matrix:\n  axes: {hw: [h200, b200], est: [300, 600, 900, 1200, 1800]}\n"
        "ci: {backend: cuda, est_time: '${matrix.est}', labels: [glm5]}\n"
    )
    (tmp_path / "gen" / "amd.yaml").write_text(
        f"extends: {MATRICES}/rocm/glm5-async.yaml\nhardware: mi350x\n"
        "cluster: {gpus_per_node: '${matrix.gpus}'}\n"
        "matrix:\n  axes: {gpus: [4, 2], est: [240, 480, 720, 960, 1500]}\n"
        "ci: {backend: rocm, suite: stage-c-4-gpu-mi350, est_time: '${matrix.est}'}\n"
        "args:\n  sglang:\n"
        + "".join(
            f"    {flag}: ${{cluster.gpus_per_node // 2}}\n"
            for flag in ("rollout-num-gpus-per-engine", "sglang-dp-size", "sglang-ep-size")
        )
    )
    (tmp_path / "runners.yaml").write_text(RUNNERS + MI355X + H100 + MI350_8)
    return tmp_path


def plan(cli, *argv: str) -> dict:
    result = cli("ci", "plan", *argv, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_every_runnable_cell_is_on_exactly_one_runner_of_its_hardware_within_the_bound(cli, tree):
    made = plan(cli, "gen", "matrices", "--runners", "runners.yaml")
    listed = json.loads(cli("list", "gen", "matrices", "--format", "json").out)["cells"]
    planned = ("runnable", "unchecked")  # unchecked: requires: that run checks on the runner
    runnable = [c["id"] for c in listed if c["status"] in planned]
    skipped = sorted(c["id"] for c in listed if c["status"] not in planned)  # disabled in miles' CI
    assert (len(listed), skipped) == (61, ["qwen3-30b-a3b/amd_moriep_fp8_bridge", "qwen3-30b-a3b/r3_deepep_fp8"])
    assert made["unplaced"] == [] and sorted(c["id"] for c in made["left_out"]) == skipped
    cells = {c["id"]: c for c in made["cells"]}
    classes = {c["label"]: c for c in made["classes"]}
    placed = [cell for shard in made["shards"] for cell in shard["cells"]]
    assert sorted(placed) == sorted(runnable)  # each runnable cell once
    for shard in made["shards"]:
        runner = classes[shard["label"]]
        assert shard["shard"] in runner["shards"]
        assert {cells[c]["hardware"] for c in shard["cells"]} == {runner["hardware"]}
        assert all(cells[c]["gpus"] <= runner["gpus"] for c in shard["cells"])
        assert shard["load"] == sum(cells[c]["est_time"] for c in shard["cells"]) <= runner["bound"]
    assert [(c["label"], c["cells"], c["total"], len(c["shards"])) for c in made["classes"]] == [
        ("self-hosted,nvidia,h200,8gpu", 19, 18000, 3),
        ("self-hosted,amd,mi350,4gpu", 22, 18000, 4),  # the qwen3 family's AMD cells on 4-GPU shares
        ("b200-8gpu", 10, 9600, 2),
        ("mi355x-8gpu", 2, 1200, 1),
        ("h100-8gpu", 4, 4500, 1),
        ("mi350-8gpu", 2, 1700, 1),
    ]
    assert cells["gen/amd[gpus=2,est=1500]"] | {"content_hash": "-"} == {
        "id": "gen/amd[gpus=2,est=1500]",
        "spec": "gen/amd.yaml",
        "hardware": "mi350x",
        "gpus": 2,
        "est_time": 1500,
        "est_source": "spec",
        "content_hash": "-",
        "ci": {
            "backend": "rocm",
            "suite": "stage-c-4-gpu-mi350",
            "runs_on": None,
            "est_time": 1500,
            "labels": [],
            "nightly": False,
        },
        "attempts": 2,  # retry.infra: 1 (the GLM-5 base)
        "gpu_hours": 1.6667,  # 1500 s x 2 GPUs x 2 attempts
        "changed": [],
    }
    assert cells["nv/glm5-colocate"]["est_source"] == "default"
    github = json.loads(cli("ci", "plan", "gen", "matrices", "--runners", "runners.yaml").out)
    assert [(e["runs-on"], e["shard"], e["cells"]) for e in github["include"]] == [
        (s["runs_on"], s["shard"], s["cells"]) for s in made["shards"]
    ]
    assert github["include"][3]["runs-on"] == ["self-hosted", "amd", "mi350", "4gpu"]


def test_cells_no_runner_can_take_are_listed_and_strict_fails(cli, tree):
    (tree / "runners.yaml").write_text(RUNNERS + H100 + MI350_8)  # no MI355X class
    made = plan(cli, "gen", "matrices", "--runners", "runners.yaml")
    reason = "no runner class has hardware mi355x (they have: b200, h100, h200, mi350x)"
    assert made["unplaced"] == [
        {"id": "rocm/glm5-async", "hardware": "mi355x", "gpus": 8, "reason": reason},
        {"id": "rocm/glm5-async[fp8_rollout=true]", "hardware": "mi355x", "gpus": 8, "reason": reason},
    ]
    strict = cli("ci", "plan", "gen", "matrices", "--runners", "runners.yaml", "--strict")
    assert strict.code == 1
    assert strict.err == (
        f"run-matrix: no runner for rocm/glm5-async: {reason}\n"
        f"run-matrix: no runner for rocm/glm5-async[fp8_rollout=true]: {reason}\n"
    )
    table = cli("ci", "plan", "gen", "matrices", "--runners", "runners.yaml", "--format", "markdown").out
    assert (
        "### Cells no runner can take\n\n| cell | hardware | GPUs | why |\n|---|---|---:|---|\n"
        f"| `rocm/glm5-async` | mi355x | 8 | {reason} |\n"
        f"| `rocm/glm5-async[fp8_rollout=true]` | mi355x | 8 | {reason} |\n\n"
    ) in table  # then the cells left out: the two miles' CI disables


def test_nightly_and_skipped_cells_are_left_out_unless_asked(cli, tree):
    (tree / "gen" / "nightly.yaml").write_text(
        f"extends: {MATRICES}/nv/glm5-colocate.yaml\nci: {{nightly: true, est_time: 50}}\n"
        "matrix:\n  adjust:\n    lab:\n      match: {fp8_rollout: true}\n      skip: {reason: no FP8 kernels here}\n"
    )
    made = plan(cli, "gen/nightly.yaml", "--runners", "runners.yaml")
    assert [(c["id"], c["reason"]) for c in made["left_out"]] == [
        ("gen/nightly", "nightly: planned only with --nightly"),
        ("gen/nightly[fp8_rollout=true]", "skipped: no FP8 kernels here"),
    ]
    nightly = plan(cli, "gen/nightly.yaml", "--runners", "runners.yaml", "--nightly")
    assert [s["cells"] for s in nightly["shards"]] == [["gen/nightly"]]


def test_est_time_comes_from_the_history_store_when_one_is_given(cli, tree):
    from runner.results.history.location import parse
    from runner.results.history.store import AttemptRecord, Identity, Store

    store = Store.open(parse(str(tree / "h.sqlite"), "--history", from_command_line=True))
    identity = Identity("gen/nv", "gen/nv.yaml", "x", "h200", "", "0")
    for seconds in (100.0, 200.0, 301.0):
        store.record(AttemptRecord(identity, 1, "j", "succeeded", "passed", True, "", {}, (), seconds))
    store.close()
    made = plan(cli, "gen/nv.yaml", "-k", "gen/nv", "--runners", "runners.yaml", "--history", "h.sqlite")
    assert [(c["id"], c["est_time"], c["est_source"]) for c in made["cells"]] == [("gen/nv", 201, "history")]
    listed = cli("list", "gen/nv.yaml", "-k", "gen/nv", "--history", "h.sqlite").out.splitlines()
    assert listed[0].split() == ["CELL", "HARDWARE", "GPUS", "HASH", "CI", "STATUS"]
    assert listed[1].endswith("  201 s (history)  runnable")
    missing = cli("ci", "plan", "gen", "--runners", "runners.yaml", "--history", "none.sqlite")
    assert (missing.code, missing.err) == (
        2,
        "run-matrix: --history none.sqlite: no such file (a history store `run` wrote)\n",
    )


def test_list_and_coverage_show_the_ci_block(cli, tree):
    rows = json.loads(cli("list", "gen/amd.yaml", "-k", "gen/amd", "--format", "json").out)["cells"]
    assert (rows[0]["ci"]["suite"], rows[0]["est_time"], rows[0]["est_source"]) == (
        "stage-c-4-gpu-mi350",
        240,
        "spec",
    )
    text = cli("list", "gen/amd.yaml", "-k", "gen/amd").out.splitlines()
    assert text[1].endswith("  stage-c-4-gpu-mi350, 240 s (spec)  requirements unchecked (no --miles-root): "
                            "requires.indexer-topk-clamp, requires.sparse-mla-gfx950, requires.te-ck-grouped-gemm")
    coverage = cli("coverage", "gen/nv.yaml", "--format", "markdown").out.splitlines()
    assert coverage[2].endswith(" | runs on miles-dc8b499b: `gen/nv` (300 s) | — | — | — | — |")
    data = json.loads(cli("coverage", "gen/amd.yaml", "--format", "json").out)
    assert data["tests"][0]["ci"]["gen/amd"]["suite"] == "stage-c-4-gpu-mi350"


def dry_run(cli, *argv: str) -> list[str]:
    result = cli("run", *argv, "--dry-run", "--no-preflight", "--format", "json")  # the plan alone
    assert result.code == 0, result.err
    return [c["id"] for c in json.loads(result.out)["cells"]]


def test_run_takes_exactly_the_cells_of_a_shard(cli, tree):
    (tree / "plan.json").write_text(
        cli("ci", "plan", "gen", "matrices", "--runners", "runners.yaml", "--format", "json").out
    )
    (tree / "matrix.json").write_text(cli("ci", "plan", "gen", "matrices", "--runners", "runners.yaml").out)
    shards = json.loads((tree / "plan.json").read_text())["shards"]
    ran = [dry_run(cli, "--shard-of", "plan.json", str(s["shard"])) for s in shards]
    assert ran == [s["cells"] for s in shards]
    assert (
        dry_run(cli, "gen", "matrices", "--shard-of", "matrix.json", "3") == shards[3]["cells"]
    )  # no specs in it
    entry = json.loads((tree / "matrix.json").read_text())["include"][0]
    (tree / "entry.json").write_text(json.dumps(entry))  # toJSON(matrix) in a workflow
    assert dry_run(cli, "gen", "matrices", "--cells", "entry.json") == shards[0]["cells"]
    (tree / "cells.txt").write_text("# two cells\ngen/nv[est=900]\n\nrocm/glm5-async\n")
    assert dry_run(cli, "gen", "matrices", "--cells", "cells.txt") == ["gen/nv[est=900]", "rocm/glm5-async"]


@pytest.mark.parametrize(
    ("files", "argv", "message"),
    [
        (
            {"c.json": '["gen/nv[est=901]"]'},
            ("gen", "--cells", "c.json"),
            "--cells c.json: 1 cell the selected specs do not have: gen/nv[est=901] (did you mean "
            "'gen/nv[est=900]'?) — give the specs the plan was made from",
        ),
        (
            {"c.json": '["gen/nv", "gen/nv"]'},
            ("gen", "--cells", "c.json"),
            "c.json: gen/nv named twice; a shard runs each cell once",
        ),
        (
            {"c.json": '{"cells": 3}'},
            ("gen", "--cells", "c.json"),
            '--cells c.json: expected a JSON list of cell ids (or {"cells": [...]}), or one cell id a line',
        ),
        (
            {"p.json": '{"include": []}'},
            ("--shard-of", "p.json", "0"),
            "--shard-of p.json: no shard 0 (shards: none)",
        ),
        (
            {"p.json": '{"include": 5}'},
            ("--shard-of", "p.json", "0"),
            "--shard-of p.json: include is not a list of matrix entries",
        ),
        (
            {"p.json": '{"shards": []}'},
            ("--shard-of", "p.json", "0"),
            "--shard-of p.json: not a plan of `run-matrix ci plan --format json|github` (specs: Field required)",
        ),
        (
            {"p.json": "{"},
            ("--shard-of", "p.json", "0"),
            "--shard-of p.json: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        (
            {"p.json": "{}"},
            ("--shard-of", "p.json", "-1"),
            "--shard-of p.json -1: K is a shard number (0, 1, ...)",
        ),
        ({}, (), "run: give a spec, folder or cell id (or --cells FILE, --shard-of PLAN K)"),
    ],
)
def test_run_refuses_what_names_no_shard(cli, tree, files, argv, message):
    for name, text in files.items():
        (tree / name).write_text(text)
    result = cli("run", *argv, "--dry-run")
    assert (result.code, result.err) == (2, f"run-matrix: {message}\n")


def test_an_empty_cells_list_runs_nothing_and_exits_0_with_empty_reports(cli, tree):
    (tree / "c.json").write_text("[]")  # a shard, or a plan of what a change touches, with nothing in it
    result = cli("run", "gen", "--cells", "c.json", "--log-dir", "logs", "--junit", "j.xml", "--format", "json")
    assert (result.code, json.loads(result.out)["cells"], json.loads(result.out)["exit_code"]) == (0, [], 0)
    assert result.err.splitlines() == [
        "run-matrix: --cells c.json names no cell: nothing to run",
        "run-matrix: no cells in 0 s",
    ]
    assert 'tests="0"' in (tree / "j.xml").read_text()
    assert cli("run", "gen", "-k", "nothing-has-this", "--dry-run").code == 2  # a -k matching nothing


def test_a_cell_changed_since_the_plan_is_a_warning(cli, tree):
    (tree / "plan.json").write_text(
        cli("ci", "plan", "gen/nv.yaml", "--runners", "runners.yaml", "--format", "json").out
    )
    first = json.loads((tree / "plan.json").read_text())["shards"][0]["cells"][0]
    (tree / "gen" / "nv.yaml").write_text((tree / "gen" / "nv.yaml").read_text() + "description: changed\n")
    result = cli("run", "--shard-of", "plan.json", "0", "--dry-run", "--no-preflight")  # the plan alone
    assert result.code == 0 and (
        f"run-matrix: warning: {first} changed since the plan was made (its est_time may be off)\n"
        in result.err
    )


def test_overlapping_specs_plan_each_cell_once_and_one_id_from_two_files_is_refused(cli, tree):
    made = plan(cli, "gen", "gen/nv.yaml", "--runners", "runners.yaml")
    assert len(made["cells"]) == 40
    (tree / "other" / "hardware").mkdir(parents=True)
    (tree / "other" / "gen").mkdir()
    (tree / "other" / "gen" / "nv.yaml").write_text((tree / "gen" / "nv.yaml").read_text())
    result = cli("ci", "plan", "gen/nv.yaml", "other/gen/nv.yaml", "--runners", "runners.yaml")
    assert (result.code, result.err) == (
        2,
        "run-matrix: two cells are named gen/nv: in gen/nv.yaml and other/gen/nv.yaml; plan them apart\n",
    )


def test_the_history_store_of_the_environment_serves_the_plan(cli, tree, monkeypatch):
    from runner.results.history.location import parse
    from runner.results.history.store import AttemptRecord, Identity, Store

    store = Store.open(parse(str(tree / "team.sqlite"), "--history", from_command_line=True))
    store.record(
        AttemptRecord(
            Identity("gen/nv", "gen/nv.yaml", "x", "h200", "", "0"),
            1,
            "j",
            "succeeded",
            "passed",
            True,
            "",
            {},
            (),
            42.0,
        )
    )
    store.close()
    monkeypatch.setenv("RUN_MATRIX_HISTORY_URL", str(tree / "team.sqlite"))
    made = plan(cli, "gen/nv.yaml", "-k", "gen/nv", "--runners", "runners.yaml")
    assert [(c["est_time"], c["est_source"]) for c in made["cells"]] == [(42, "history")]
    listed = json.loads(cli("list", "gen/nv.yaml", "-k", "gen/nv", "--format", "json").out)["cells"]
    assert listed[0]["est_source"] == "spec"  # list reads a store only when given --history
