"""run-matrix port, hardware and coverage on a copy of the shipped matrices."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner import pipeline
from runner.diff import diff
from runner.spec import locate
from tests.conftest import DATA, REQUIRED_PROFILES, known_elided

MATRICES = locate.BUNDLED_MATRICES


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(MATRICES, tmp_path / "matrices")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "matrices"


def test_port_glm5_to_mi355x_validates_and_carries_upstreams_substitutions(cli, tree):
    result = cli("port", "nv/glm5-colocate", "--to", "mi355x", "--format", "json")
    report = json.loads(result.out)
    assert result.code == 0
    assert report["overlay"] == "matrices/rocm/glm5-colocate-mi355x.yaml"
    assert [p["severity"] for p in report["problems"]] == ["warning", "warning"]  # the two TODOs (G6)
    assert {p["rule"] for p in report["problems"]} == {"G6"}
    ported = diff(pipeline.one("nv/glm5-colocate"), pipeline.one("rocm/glm5-colocate-mi355x"))
    changes = {d.key: (d.b, d.why) for d in ported.spec}
    assert changes["args.misc.attention-backend"][0] == "fused"
    assert changes["args.misc.moe-enable-deepep"][0] is None
    assert changes["args.misc.moe-token-dispatcher-type"][0] == "alltoall"
    assert changes["args.sglang.sglang-nsa-prefill-backend"][0] == "tilelang"
    assert changes["args.sglang.sglang-nsa-decode-backend"][0] == "tilelang"
    assert changes["args.sglang.sglang-page-size"][0] is None
    assert changes["args.sglang.sglang-disable-custom-all-reduce"] == (
        True,
        "SGLang's custom all-reduce must be disabled on this platform (required on AMD)",
    )
    assert changes["env.HIP_VISIBLE_DEVICES"][0] == "0,1,2,3,4,5,6,7"
    assert "launch.script" not in changes and "args.misc.colocate" not in changes  # the mode is a choice
    assert all(why for _, why in changes.values())


def test_port_handles_what_only_some_cells_need(cli, tree):
    cli("port", "nv/glm5-colocate", "--to", "mi355x")
    fp8 = pipeline.one("rocm/glm5-colocate-mi355x[fp8_rollout=true]")
    assert "sglang-moe-a2a-backend" not in fp8.spec.args.sglang
    component = tree / "components/port/glm5-colocate-mi355x-fp8_rollout-true.yaml"
    assert "sglang-moe-a2a-backend: !delete" in component.read_text()
    assert [p.rule for p in pipeline.problems(fp8)] == ["G6", "G6"]


def test_port_refits_to_a_smaller_node_and_says_so(cli, tree):
    report = json.loads(cli("port", "nv/glm5-colocate", "--to", "gb200", "--format", "json").out)
    assert report["refit"] == [
        {
            "key": "args.perf.context-parallel-size",
            "value": 1,
            "why": "re-fit for 4 GPUs per node on gb200 (was 2)",
        }
    ]
    cell = pipeline.one("nv/glm5-colocate-gb200")
    assert (
        cell.spec.cluster.gpus_per_node,
        cell.flag("tensor-model-parallel-size"),
        cell.flag("context-parallel-size"),
    ) == (4, 4, 1)
    assert not [p for p in pipeline.problems(cell) if p.severity == "error"]


def test_port_leaves_todos_it_cannot_decide(cli, tree):
    text = cli("port", "rocm/glm5-async", "--to", "h200", "-o", "matrices/nv/glm5-async-h200.yaml").out
    said = [line for line in text.splitlines() if "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES" in line]
    assert said == [  # once: by its warning at its line (the env var's deletion is a TODO, not a change)
        "matrices/nv/glm5-async-h200.yaml:14: warning [G6] todo.env.RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES:"
        " left for a person: a ROCm workaround of the source; on the target it is probably not needed"
    ]
    overlay = (tree / "nv/glm5-async-h200.yaml").read_text()
    assert "# TODO(port): decide these, then delete the entries\ntodo:\n" in overlay
    assert "CUDA_VISIBLE_DEVICES" in overlay


def test_port_refuses_to_overwrite_without_force(cli, tree):
    assert cli("port", "nv/glm5-colocate", "--to", "mi355x").code == 0
    overlay = tree / "rocm/glm5-colocate-mi355x.yaml"
    overlay.write_text(overlay.read_text() + "# my edit\n")
    again = cli("port", "nv/glm5-colocate", "--to", "mi355x")
    assert (again.code, again.out) == (2, "")
    assert again.err == (
        "run-matrix: matrices/rocm/glm5-colocate-mi355x.yaml, matrices/components/port/glm5-colocate-mi355x-"
        "fp8_rollout-true.yaml already exist; --force overwrites (your edits are lost), -o writes elsewhere\n"
    )
    assert overlay.read_text().endswith("# my edit\n")
    assert cli("port", "nv/glm5-colocate", "--to", "mi355x", "--force").code == 0
    assert not overlay.read_text().endswith("# my edit\n")


def test_port_decides_requires_and_expect_per_target(cli, tree):
    report = json.loads(cli("port", "rocm/glm5-async", "--to", "h200", "--format", "json").out)
    assert [
        (c["key"], c["rule"]) for c in report["applied"] if c["key"].startswith(("requires", "expect"))
    ] == [("requires.sparse-mla-gfx950", "arch-kernels")]
    assert {k: v[:20] for k, v in report["todo"].items() if k.startswith(("requires", "expect"))} == {
        "requires.te-ck-grouped-gemm": "names the source's s",
        "expect.perf/step_time": "a bound measured on ",
    }
    cell = pipeline.one("nv/glm5-async-h200")
    assert set(cell.spec.requires) == {"indexer-topk-clamp", "te-ck-grouped-gemm"}  # the git fix is carried
    assert set(cell.spec.expect) == {"train/ppo_kl", "train/train_rollout_logprob_abs_diff", "perf/step_time"}
    same_arch = json.loads(cli("port", "rocm/glm5-async", "--to", "mi300x", "--format", "json").out)
    assert "requires.te-ck-grouped-gemm" not in same_arch["todo"]  # the same software stack
    assert [c["key"] for c in same_arch["applied"] if c["key"].startswith("req")] == [
        "requires.sparse-mla-gfx950"
    ]


def test_a_port_to_two_gpus_leaves_no_warning_of_its_own(cli, tree):
    h200 = (tree / "hardware/h200.yaml").read_text()
    (tree / "hardware/h200x2.yaml").write_text(
        h200.replace("name: h200", "name: h200x2") + "gpus_per_node: 2\n"
    )
    report = json.loads(cli("port", "nv/glm5-colocate", "--to", "h200x2", "--format", "json").out)
    assert (report["problems"], report["caused"]) == ([], [])
    followups = {c["key"]: (c["value"], c["rule"], c["why"]) for c in report["followups"]}
    assert followups["args.perf.sequence-parallel"][:2] == (None, "sequence-parallel-tp1")
    assert followups["args.perf.expert-model-parallel-size"] == (
        "${args.misc.actor-num-gpus-per-node}",
        "stale-reason",
        "8 → 2 on h200x2; the source's reason was for h200: one expert shard per actor GPU (256 experts / 8)",
    )
    assert followups["args.perf.context-parallel-size"][2].startswith("kept at 2 on h200x2;")
    cell = pipeline.one("nv/glm5-colocate-h200x2")
    assert (cell.flag("expert-model-parallel-size"), cell.flag("sequence-parallel")) == (2, None)


def test_port_to_unknown_hardware(cli, tree):
    result = cli("port", "nv/glm5-colocate", "--to", "mi356")
    assert result.code == 2
    assert known_elided(result.err) == (
        "matrices/hardware: error [unknown-name] --to: no hardware profile named 'mi356' (known: ...)\n"
        "  ==> did you mean 'mi355x'?\n"
    )


def test_hardware_lists_and_shows(cli, tree):
    lines = cli("hardware").out.splitlines()
    names = [line.split()[0] for line in lines[1:]]
    assert names == sorted(names) and set(REQUIRED_PROFILES) <= set(names)
    (mi350x,) = [line for line in lines[1:] if line.startswith("mi350x ")]
    assert mi350x.split()[:7] == ["mi350x", "amd", "gfx950", "8", "288", "GB", "miles-dc8b499b,"]
    shown = cli("hardware", "gb200").out
    assert "4 GPUs per node x 186 GB" in shown and "deepep: true" in shown
    assert json.loads(cli("hardware", "mi325x", "--format", "json").out)["memory_gb"] == 256
    mi355x = cli("hardware", "mi355x").out
    assert (
        "  stack miles-dc8b499b: the container of miles dc8b499b\n"
        "    container: lmsysorg/sglang:v0.5.10-rocm720-mi35x + sglang-miles (docker/Dockerfile.rocm_MI350-5)\n"
    ) in mi355x
    assert (
        "    megatron_attention_backends: flash, fused, unfused, local, auto\n      source: miles 31f1ca96"
        in mi355x
    )


def test_coverage_markdown_and_json(cli, tree):
    (tree / "rocm" / "glm5-mi300x.yaml").write_text(
        "extends: glm5-async.yaml\nhardware: mi300x\nmatrix:\n  adjust:\n    broken:\n      match: {profile.arch: gfx942}\n"
        "      skip: {reason: sparse MLA kernels not tuned for gfx942, expires: 2999-01-01}\n"
    )
    table = cli("coverage", "matrices", "--format", "markdown").out.splitlines()
    row = _columns(table[0], table[2])
    assert (
        row
        == {
            **{name: "—" for name in row},
            "test": "`glm5-744b-a40b-4layer`",
            "h200": "runs on miles-dc8b499b, miles-31f1ca96: `nv/glm5-colocate`, `nv/glm5-main-ci`"
            " (stage-c-2-gpu-h200, 900 s), `nv/glm5-main`",
            "mi300x": "skipped on miles-dc8b499b: sparse MLA kernels not tuned for gfx942 (until 2999-01-01)"
            " (`rocm/glm5-mi300x`)",
            "mi355x": "requirements unchecked (no --miles-root) on miles-dc8b499b: `rocm/glm5-async`",  # needs a checkout
        }
    )
    assert set(REQUIRED_PROFILES) <= set(row)
    data = json.loads(cli("coverage", "matrices", "--format", "json").out)
    assert data["tests"][1]["variant"] == "fp8_rollout=true"
    assert data["tests"][0]["hardware"]["mi300x"]["reasons"] == [
        "sparse MLA kernels not tuned for gfx942 (until 2999-01-01)"
    ]
    assert data["tests"][0]["hardware"]["b200"] == {
        "status": "missing",
        "cells": [],
        "reasons": [],
        "stacks": [],
    }
    assert data["tests"][0]["hardware"]["mi355x"]["stacks"] == ["miles-dc8b499b"]


def _columns(header: str, row: str) -> dict[str, str]:
    """A markdown table's row by its header's names (no cell of these holds an escaped |)."""
    names = [cell.strip() for cell in header.strip("|").split("|")]
    return dict(zip(names, (cell.strip() for cell in row.strip("|").split("|")), strict=True))


def test_a_profile_added_as_readme_says_is_listed_covered_and_validated(cli, tree):
    (tree / "hardware" / "h20.yaml").write_text(
        "extends: families/nvidia-hopper.yaml\nname: h20\ndescription: NVIDIA H20 96GB, 8 per node\n"
        "memory_gb: 96\ninterconnect: NVLink 4 + NVSwitch, 900 GB/s per GPU\n"
        "sources:\n  machine: https://www.nvidia.com/en-us/data-center/h20/ (memory, NVLink)\n"
    )
    (h20,) = [line for line in cli("hardware").out.splitlines() if line.startswith("h20 ")]
    assert h20.split()[:6] == ["h20", "nvidia", "sm90", "8", "96", "GB"]
    table = cli("coverage", "matrices", "--format", "markdown").out.splitlines()
    assert _columns(table[0], table[2])["h20"] == "—"
    checked = cli("validate", "matrices/hardware/h20.yaml").out
    assert checked.startswith("0 cells, 1 supporting file checked in ") and checked.endswith(
        ": 0 errors, 0 warnings\n"
    )


def test_coverage_markdown_escapes_what_would_break_the_table(cli, tree):
    (tree / "rocm" / "glm5-mi300x.yaml").write_text(
        "extends: glm5-async.yaml\nhardware: mi300x\nmatrix:\n  adjust:\n    broken:\n      match: {profile.arch: gfx942}\n"
        "      skip:\n        reason: |-\n          TP|EP kernels fail\n          see the issue\n        expires: 2999-01-01\n"
    )
    row = cli("coverage", "matrices", "--format", "markdown").out.splitlines()[2]
    assert (
        "| skipped on miles-dc8b499b: TP\\|EP kernels fail see the issue (until 2999-01-01) (`rocm/glm5-mi300x`) |"
        in row
    )
    header = cli("coverage", "matrices", "--format", "markdown").out.splitlines()[0]
    assert row.count(" | ") == header.count(" | ")  # as many columns as the header, still


def test_port_writes_its_files_once_and_nothing_else(cli, tree):
    before = {p for p in tree.rglob("*")}
    assert cli("port", "nv/glm5-colocate", "--to", "gb200").code == 0  # a re-fit: many candidates
    written = sorted(p.relative_to(tree).as_posix() for p in set(tree.rglob("*")) - before)
    assert written == ["nv/glm5-colocate-gb200.yaml"]  # no candidate, staged or hidden, is left


def test_a_port_follows_the_stack_the_source_targets(cli, tree):
    # miles main's Qwen3-4B recipe on an H200: its stack's ROCm container runs flash attention and
    # SGLang's custom all-reduce, so nothing of PR 1124's CK fused attention is carried over
    recipe = (
        (DATA / "upstream-amd" / "run-qwen3-4b.yaml")
        .read_text()
        .replace("hardware: mi350x", "hardware: h200")
    )
    (tree / "nv" / "qwen3-4b.yaml").write_text(recipe)
    report = json.loads(cli("port", "nv/qwen3-4b", "--to", "mi355x", "--format", "json").out)
    applied = {change["key"] for change in report["applied"]}
    assert "args.misc.attention-backend" not in applied
    assert "args.sglang.sglang-disable-custom-all-reduce" not in applied
    assert not any(key.startswith("env.NVTE_") for key in applied)
    assert pipeline.one("rocm/qwen3-4b-mi355x").flag("attention-backend") == "flash"
    # the same recipe pinned to PR 1124's miles gets that container's facts
    (tree / "nv" / "qwen3-4b-pr.yaml").write_text("extends: qwen3-4b.yaml\nmiles_version: dc8b499b\n")
    report = json.loads(cli("port", "nv/qwen3-4b-pr", "--to", "mi355x", "--format", "json").out)
    applied = {change["key"]: change["value"] for change in report["applied"]}
    assert applied["args.misc.attention-backend"] == "fused"
    assert applied["args.sglang.sglang-disable-custom-all-reduce"] is True
    assert applied["env.NVTE_FUSED_ATTN"] == "1"


QWEN3_14B = """hardware: h200
model: {type: qwen3-14B}
cluster: {gpus_per_node: 8}
launch: {script: train.py}
args:
  misc: {colocate: true}
  perf: {tensor-model-parallel-size: 1, use-dynamic-batch-size: true, max-tokens-per-gpu: 4096, recompute-granularity: full}
  sglang: {rollout-num-gpus-per-engine: 1, sglang-mem-fraction-static: 0.5}
"""


def test_port_to_gpus_that_hold_less_refits_the_least_that_fits(cli, tree):
    # Qwen3-14B at TP 1: 14.8 B x (2 + 4 + 12 / DP 8) = 111 GB of state fits 141 GB, not 80; TP 2 fits
    (tree / "nv" / "q14.yaml").write_text(QWEN3_14B)
    assert [p.rule for p in pipeline.problems(pipeline.one("nv/q14"))] == []
    report = json.loads(cli("port", "nv/q14", "--to", "h100", "--format", "json").out)
    assert report["refit"] == [
        {
            "key": "args.perf.tensor-model-parallel-size",
            "value": 2,
            "why": "re-fit for h100's 80 GB a GPU (was 1)",
        }
    ]
    assert [p["rule"] for p in report["problems"]] == []


def test_port_where_no_layout_fits_leaves_the_numbers_as_todos(cli, tree):
    (tree / "nv" / "q14.yaml").write_text(QWEN3_14B.replace("qwen3-14B", "qwen3-235B-A22B"))
    result = cli("port", "nv/q14", "--to", "h100", "--format", "json")
    report = json.loads(result.out)
    assert result.code == 2 and report["refit"] == []
    todo = report["todo"]["args.perf.tensor-model-parallel-size"]
    assert todo.startswith("no re-fit fits the memory: training cannot fit a GPU of h100: at least ")
    assert todo.endswith(") against 80.0 GB")
