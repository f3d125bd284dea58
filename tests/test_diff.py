from __future__ import annotations

import json
from pathlib import Path

from runner import pipeline
from runner.diff import diff

ROOT = Path(__file__).parents[1]
NV = "nv/glm5-colocate.yaml"
ROCM = "rocm/glm5-async.yaml"



def test_markdown_golden(cli, in_repo, golden):
    result = cli("diff", NV, ROCM, "--format", "markdown")
    assert result.code == 0
    golden("diff/nv-glm5-colocate--rocm-glm5-async.md", result.out)


def test_markdown_has_every_upstream_substitution_with_its_reason(cli, in_repo):
    table = cli("diff", NV, ROCM, "--format", "markdown").out
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines() if line.startswith("| `")}
    expected = {  # miles PR 1124's list: key -> (ROCm value, part of the reason)
        "launch.script": ("`train_async.py`", "4 train + 4 rollout GPUs"),
        "args.misc.attention-backend": ("`fused`", "CK fused attention"),
        "args.misc.moe-enable-deepep": ("—", "DeepEP needs NVIDIA InfiniBand + GPUDirect RDMA"),
        "args.misc.moe-token-dispatcher-type": ("`alltoall`", "all-to-all instead"),
        "args.optimizer.optimizer-cpu-offload": ("`true`", "as the Qwen3 async tests do"),
        "args.sglang.sglang-nsa-prefill-backend": ("`tilelang`", "ROCm port of the NSA kernels"),
        "args.sglang.sglang-nsa-decode-backend": ("`tilelang`", "ROCm port of the NSA kernels"),
        "args.sglang.rollout-num-gpus-per-engine": ("`2`", "2 engines x 2 GPUs"),
        "args.sglang.sglang-dp-size": ("`2`", "they do not multiply it"),
        "args.sglang.sglang-ep-size": ("`2`", "they do not multiply it"),
        "args.sglang.sglang-page-size": ("—", "page size 1 for the NSA pool on ROCm"),
        "args.misc.disable-weights-backuper": ("—", "segfaults"),
        "args.sglang.sglang-disable-custom-all-reduce": ("`true`", "required on AMD"),
    }
    for key, (value, reason) in expected.items():
        cells = [c.strip() for c in rows[key].strip("|").split(" | ")]
        assert cells[2].startswith(value), key
        assert reason in cells[3], key
    assert "| `mode` | `colocate` | `async` |  |" in table
    assert "| `engines` | `1` | `2` |  |" in table
    assert "| `GPUs per engine` | `8` | `2` |  |" in table


def test_json_shape(cli, in_repo):
    data = json.loads(cli("diff", NV, ROCM, "--format", "json").out)
    assert set(data) == {"a", "b", "differences", "launch", "layout", "allowed", "outside_allowed"}
    by_key = {d["key"]: d for d in data["differences"]}
    assert by_key["args.misc.moe-enable-deepep"] == {
        "key": "args.misc.moe-enable-deepep",
        "a": True,
        "b": None,
        "a_source": "matrices/nv/glm5-colocate.yaml:38",
        "b_source": None,
        "why": "DeepEP needs NVIDIA InfiniBand + GPUDirect RDMA",
    }
    assert by_key["args.sglang.rollout-num-gpus"]["a"] is None
    assert {d["key"] for d in data["launch"]} >= {"train_script", "--colocate", "env HIP_VISIBLE_DEVICES"}
    assert {d["key"]: (d["a"], d["b"]) for d in data["layout"]}["GPUs for training"] == (8, 4)


def test_unchanged_values_are_not_shown_and_order_is_stable():
    nv = pipeline.cell(pipeline.locate.BUNDLED_MATRICES / NV)
    rocm = pipeline.cell(pipeline.locate.BUNDLED_MATRICES / ROCM)
    first, second = diff(nv, rocm), diff(nv, rocm)
    assert first == second
    keys = [d.key for d in first.spec]
    assert "args.ckpt.save-interval" not in keys and "model.type" not in keys
    assert keys.index("args.perf.tensor-model-parallel-size") < keys.index("args.sglang.rollout-num-gpus")
    assert diff(nv, nv).spec == ()


def test_allow_guards_against_drift(cli, in_repo):
    running = ["--allow", "requires.*", "--allow", "expect.*", "--allow", "retry.*"]  # what running ROCm needs
    allowed = ["--allow", "hardware", "--allow", "launch.*", "--allow", "args.*", "--allow", "env.*", *running]
    assert cli("diff", NV, ROCM, "--format", "json", *allowed).code == 0
    partial = cli("diff", NV, ROCM, "--format", "json", "--allow", "args.*", "--allow", "hardware", *running)
    assert partial.code == 1
    assert partial.err.startswith("run-matrix: 13 key(s) differ outside the allowed deltas: launch.script, env.")
    assert cli("diff", NV, ROCM, "--format", "json").code == 0  # no allowances: a report, not a guard


def test_allowed_deltas_in_a_spec(cli, write):
    write("a.yaml", "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
                    "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\n  perf: {tensor-model-parallel-size: 2}\n")
    write("b.yaml", "extends: a.yaml\nargs:\n  perf: {tensor-model-parallel-size: 4}\n  rollout: {num-rollout: 3}\n"
                    "allowed_deltas: [args.perf.*]\n")
    result = cli("diff", "a.yaml", "b.yaml", "--format", "markdown")
    assert result.code == 1
    assert result.err == "run-matrix: 1 key(s) differ outside the allowed deltas: args.rollout.num-rollout\n"
    assert cli("diff", "a.yaml", "b.yaml", "--allow", "args.rollout.*").code == 0


def test_invalid_spec_is_exit_2(cli, write):
    write("a.yaml", "hardware: h200\n")
    assert cli("diff", "a.yaml", "a.yaml").code == 2


def test_why_not_must_name_an_unset_key(write):
    from runner import check

    write("a.yaml", "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
                    "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\n"
                    "why_not:\n  args.misc.colocate: we do not colocate\n  args.misc.moe-enable-deepep: no DeepEP\n")
    problems = [str(p) for p in check.run(pipeline.cell(Path("a.yaml")))]
    assert problems == [
        "a.yaml:8: warning [G5] why_not.args.misc.colocate: why_not: explains why args.misc.colocate is unset,"
        " but it is set to True\n  ==> also at a.yaml:6\n"
        "  ==> delete the why_not entry (`why_not: {KEY: !delete}` in an overlay), or the key"
    ]
