from __future__ import annotations

import json
from pathlib import Path

from runner import pipeline
from runner.diff import diff
from runner.diff.difference import NO_REASON
from runner.spec import locate

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
    assert (
        "| `mode` | `colocate` | `async` | async mode (train_async.py) with 4 train + 4 rollout GPUs |"
        in table
    )
    assert "| `engines` | `1` | `2` | = rollout GPUs / GPUs per engine |" in table
    assert "| `GPUs per engine` | `8` | `2` | 2 engines x 2 GPUs |" in table
    # every launch difference is a spec row already, but the one the platform decides (ROCm: not probed)
    launch = table.split("### Launch")[1].split("###")[0].strip().splitlines()
    why = "the launch conventions probe it where the probe's tool is (NVIDIA) and set it on ROCm (on_rocm)"
    assert launch[2:] == [f"| `env NCCL_NVLS_ENABLE` | `${{NCCL_NVLS_ENABLE}}` | `0` | {why} |"]


def test_json_shape(cli, in_repo):
    data = json.loads(cli("diff", NV, ROCM, "--format", "json").out)
    assert set(data) == {"a", "b", "differences", "launch", "layout", "allowed", "outside_allowed"}
    by_key = {d["key"]: d for d in data["differences"]}
    assert by_key["args.misc.moe-enable-deepep"] == {
        "key": "args.misc.moe-enable-deepep",
        "a": True,
        "b": None,
        "a_source": "matrices/nv/glm5-colocate.yaml:55",
        "b_source": None,
        "why": "DeepEP needs NVIDIA InfiniBand + GPUDirect RDMA",
        "parts": [],
    }
    assert by_key["args.sglang.rollout-num-gpus"]["a"] is None
    assert by_key["requires.te-ck-grouped-gemm"]["b"] == {"kind": "package", "name": "transformer_engine", "optional": True}
    # the spec rows show them, but what the platform decides: ROCm's NCCL_NVLS_ENABLE is 0, not probed
    assert [(d["key"], d["a"], d["b"]) for d in data["launch"]] == [("env NCCL_NVLS_ENABLE", "${NCCL_NVLS_ENABLE}", "0")]
    launch = json.loads(cli("diff", NV, ROCM, "--format", "json", "--level", "launch").out)
    assert launch["differences"] == [] and launch["layout"] == []
    assert {d["key"] for d in launch["launch"]} >= {"train_script", "--colocate", "env HIP_VISIBLE_DEVICES"}
    assert {d["key"]: (d["a"], d["b"]) for d in data["layout"]}["GPUs for training"] == (8, 4)


def test_unchanged_values_are_not_shown_and_order_is_stable():
    nv = pipeline.cell(locate.BUNDLED_MATRICES / NV)
    rocm = pipeline.cell(locate.BUNDLED_MATRICES / ROCM)
    first, second = diff(nv, rocm), diff(nv, rocm)
    assert first == second
    keys = [d.key for d in first.spec]
    assert "args.ckpt.save-interval" not in keys and "model.type" not in keys
    assert keys.index("args.perf.tensor-model-parallel-size") < keys.index("args.sglang.rollout-num-gpus")
    assert diff(nv, nv).spec == ()


def test_allow_guards_against_drift(cli, in_repo):
    running = ["--allow", "requires.*", "--allow", "expect.*", "--allow", "retry.*", "--allow", "prepare.*"]
    allowed = [
        "--allow",
        "hardware",
        "--allow",
        "launch.*",
        "--allow",
        "args.*",
        "--allow",
        "env.*",
        *running,
    ]
    assert cli("diff", NV, ROCM, "--format", "json", *allowed).code == 0
    partial = cli("diff", NV, ROCM, "--format", "json", "--allow", "args.*", "--allow", "hardware", *running)
    assert partial.code == 1
    assert partial.err.startswith(
        "run-matrix: 13 keys differ outside the allowed deltas: launch.script, env."
    )
    assert cli("diff", NV, ROCM, "--format", "json").code == 0  # no allowances: a report, not a guard


def test_allow_globs_reach_the_sub_keys_of_an_entry(cli, in_repo):
    base = [
        "--allow",
        "hardware",
        "--allow",
        "launch.*",
        "--allow",
        "args.*",
        "--allow",
        "env.*",
        "--allow",
        "retry.*",
        "--allow",
        "prepare.*",
    ]
    sub_keys = [
        "--allow",
        "requires.*.kind",
        "--allow",
        "requires.*.contains",
        "--allow",
        "requires.*.name",
        "--allow",
        "requires.*.optional",
        "--allow",
        "expect.*.max",
        "--allow",
        "expect.*.step*",
    ]
    assert cli("diff", NV, ROCM, "--format", "json", *base, *sub_keys).code == 0
    missing = cli("diff", NV, ROCM, "--format", "json", *base, *sub_keys[:-2])
    assert missing.err == (
        "run-matrix: 3 keys differ outside the allowed deltas: expect.train/ppo_kl, "
        "expect.train/train_rollout_logprob_abs_diff, expect.perf/step_time\n"
    )


def test_compact_markdown_for_a_pr_description(cli, in_repo, golden):
    table = cli("diff", NV, ROCM, "--compact", "--format", "markdown").out
    golden("diff/nv-glm5-colocate--rocm-glm5-async.compact.md", table)
    lines = table.splitlines()
    assert len(lines) <= 60 and "<sub>" not in table
    rows = [line for line in lines if line.startswith("| `")]
    assert all(not line.endswith("|  |") for line in rows), [r for r in rows if r.endswith("|  |")]
    assert (
        "| `args.perf.{recompute-granularity, recompute-method, recompute-num-layers}` | `full`, `uniform`, `1` | — |"
        in table
    )
    assert (
        "| `args.sglang.{sglang-nsa-decode-backend, sglang-nsa-prefill-backend}` | `flashmla_sparse` | `tilelang` |"
        in table
    )
    assert (
        "| `requires.indexer-topk-clamp` | — | `{kind: git, contains: fix/glm5-indexer-topk-clamp}` |"
        in table
    )
    assert "optional: false" not in table  # a default nobody wrote


def test_compact_is_compact_in_every_format(cli, in_repo, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    grouped = "args.perf.{recompute-granularity, recompute-method, recompute-num-layers}"
    data = json.loads(cli("diff", NV, ROCM, "--compact", "--format", "json").out)
    full = json.loads(cli("diff", NV, ROCM, "--format", "json").out)
    assert set(data) == {"a", "b", "rows", "allowed", "outside_allowed"}
    assert len(data["rows"]) < sum(len(full[level]) for level in ("differences", "launch", "layout"))
    (row,) = [r for r in data["rows"] if r["key"] == grouped]
    assert row == {
        "key": grouped,
        "keys": [
            f"args.perf.{k}" for k in ("recompute-granularity", "recompute-method", "recompute-num-layers")
        ],
        "a": ["full", "uniform", 1],
        "b": [None, None, None],
        "why": row["why"],
    }
    assert "source" not in json.dumps(data)
    rich = cli("diff", NV, ROCM, "--compact").out
    plain = cli("diff", NV, ROCM).out
    assert grouped in rich and grouped not in plain
    assert "matrices/" not in rich and "matrices/rocm/glm5-async.yaml:" in plain  # no sources
    assert [line.split(":")[0] for line in rich.splitlines() if "→" in line] == ["Differences"]  # one table
    assert len(rich.splitlines()) < len(plain.splitlines())


def test_the_reason_for_a_removal_comes_from_the_side_that_removes_it(write):
    write(
        "a.yaml",
        "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
        "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\nenv: {X: '1', Y: '2'}\n"
        "why: {env: A sets them for its kernels}\n",
    )
    write(
        "b.yaml",
        "extends: a.yaml\nenv:\n  X: !delete\n  Y: !delete\nwhy_not: {env.X: B has no such kernels}\n",
    )
    result = diff(pipeline.cell(Path("a.yaml")), pipeline.cell(Path("b.yaml")))
    assert {d.key: d.why for d in result.spec} == {"env.X": "B has no such kernels", "env.Y": NO_REASON}
    back = diff(pipeline.cell(Path("b.yaml")), pipeline.cell(Path("a.yaml")))
    assert {d.key: d.why for d in back.spec} == {
        "env.X": "A sets them for its kernels",
        "env.Y": "A sets them for its kernels",
    }


def test_the_shipped_rocm_spec_explains_every_key_it_drops(in_repo):
    nv = pipeline.cell(locate.BUNDLED_MATRICES / NV)
    rocm = pipeline.cell(locate.BUNDLED_MATRICES / ROCM)
    dropped = [d for d in diff(nv, rocm).spec if d.b is None]
    assert len(dropped) == 19 and all(d.why for d in dropped), [d.key for d in dropped if not d.why]


def test_rich_output_never_breaks_a_key(cli, in_repo, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("diff", NV, ROCM).out
    assert "\nenv.SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK\n" in out
    assert "\nargs.sglang.sglang-disable-custom-all-reduce\n" in out
    assert len(out.splitlines()) < 300


def test_allowed_deltas_in_a_spec(cli, write):
    write(
        "a.yaml",
        "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
        "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\n  perf: {tensor-model-parallel-size: 2}\n",
    )
    write(
        "b.yaml",
        "extends: a.yaml\nargs:\n  perf: {tensor-model-parallel-size: 4}\n  rollout: {num-rollout: 3}\n"
        "allowed_deltas: [args.perf.*]\n",
    )
    result = cli("diff", "a.yaml", "b.yaml", "--format", "markdown")
    assert result.code == 1
    assert result.err == "run-matrix: 1 key differs outside the allowed deltas: args.rollout.num-rollout\n"
    assert cli("diff", "a.yaml", "b.yaml", "--allow", "args.rollout.*").code == 0


def test_invalid_spec_is_exit_2(cli, write):
    write("a.yaml", "hardware: h200\n")
    assert cli("diff", "a.yaml", "a.yaml").code == 2


def test_why_not_must_name_an_unset_key(write):
    from runner import check

    write(
        "a.yaml",
        "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
        "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\n"
        "why_not:\n  args.misc.colocate: we do not colocate\n  args.misc.moe-enable-deepep: no DeepEP\n",
    )
    problems = [str(p) for p in check.run(pipeline.cell(Path("a.yaml")))]
    assert problems == [
        "a.yaml:8: warning [G5] why_not.args.misc.colocate: why_not: explains why args.misc.colocate is unset,"
        " but it is set to True\n  ==> also at a.yaml:6\n"
        "  ==> delete the why_not entry (`why_not: {KEY: !delete}` in an overlay), or the key"
    ]


SIBLINGS = {
    "base.yaml": "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
    "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\n"
    "  perf: {tensor-model-parallel-size: 2, context-parallel-size: 1}\n"
    "why: {args.perf.tensor-model-parallel-size: the base's TP}\n",
    "a.yaml": "extends: base.yaml\nargs:\n  perf: {tensor-model-parallel-size: 4, context-parallel-size: 2}\n"
    "why:\n  args.perf.{tensor-model-parallel-size, context-parallel-size}: TP 4 x CP 2 fills the 8 actor GPUs\n"
    "why_not: {env.Z: A's kernels read no Z}\n",
    "b.yaml": "extends: base.yaml\nargs:\n  perf: {tensor-model-parallel-size: 8}\nenv: {Z: '1'}\n",
}


def _compact(cli, a: str, b: str) -> dict[str, str]:
    result = cli("diff", a, b, "--compact", "--level", "spec", "--format", "json")
    assert result.code == 0, result.err
    return {row["key"]: row["why"] for row in json.loads(result.out)["rows"]}


def test_a_changed_value_without_a_why_has_no_reason_never_another_values(cli, write):
    for name, text in SIBLINGS.items():
        write(name, text)
    # B's TP is its own, its CP the base's: neither explained; A's reason is for A's values
    assert _compact(cli, "a.yaml", "b.yaml") == {
        "args.perf.tensor-model-parallel-size": NO_REASON,
        "args.perf.context-parallel-size": NO_REASON,
        "env.Z": "A's kernels read no Z",  # A's reason for leaving out what B sets
    }
    assert _compact(cli, "b.yaml", "a.yaml") == {
        "args.perf.{tensor-model-parallel-size, context-parallel-size}": "TP 4 x CP 2 fills the 8 actor GPUs",
        "env.Z": "A's kernels read no Z",  # the why_not: of the side that leaves it out
    }
    # the base's reason explains the base's TP, not the one B's overlay wrote over it
    assert _compact(cli, "base.yaml", "b.yaml") == {
        "args.perf.tensor-model-parallel-size": NO_REASON,
        "env.Z": NO_REASON,
    }
    markdown = cli("diff", "a.yaml", "b.yaml", "--compact", "--format", "markdown").out
    assert "| `args.perf.tensor-model-parallel-size` | `4` | `8` | no reason given |" in markdown
    assert "fills the 8 actor GPUs" not in markdown
