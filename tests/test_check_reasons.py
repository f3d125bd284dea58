"""G16 (validate --strict): every value an overlay sets, changes or deletes carries its reason."""

from __future__ import annotations

BASE = (
    "hardware: h200\nmodel: {type: glm5-744B-A40B_4layer}\ncluster: {gpus_per_node: 8}\n"
    "launch: {script: train.py}\n"
    "args:\n  misc: {colocate: true}\n  perf: {tensor-model-parallel-size: 2, sequence-parallel: true}\n"
    "env: {X: '1'}\n"
    "prepare:\n  dirs: {kind: mkdir, paths: [/root/models]}\n"
)
OVERLAY = """\
extends: base.yaml
description: an overlay that gives some reasons
args:
  perf:
    tensor-model-parallel-size: 4
    sequence-parallel: true
  rollout:
    num-rollout: 3
env:
  X: !delete
  Y: '2'
prepare:
  more:
    kind: mkdir
    paths: [/root/datasets]
why:
  args.rollout.num-rollout: three rollouts are enough to see the reward move
"""
WARNINGS = [
    "overlay.yaml:5: warning [G16] args.perf.tensor-model-parallel-size: this overlay changes the value its"
    " bases set, without a why: (diff says 'no reason given')",
    "  ==> give it its reason beside it (why: {tensor-model-parallel-size: ...}), or in a why: of a mapping"
    " above it",
    "overlay.yaml:10: warning [G16] env.X: this overlay deletes the value its bases set, without a why: (diff"
    " says 'no reason given')",
    "  ==> give it its reason beside it (why: {X: ...}), or in a why: of a mapping above it",
    "overlay.yaml:11: warning [G16] env.Y: this overlay adds a key its bases do not set, without a why: (diff"
    " says 'no reason given')",
    "  ==> give it its reason beside it (why: {Y: ...}), or in a why: of a mapping above it",
    "overlay.yaml:13: warning [G16] prepare.more: this overlay adds a key its bases do not set, without a why:"
    " (diff says 'no reason given')",
    "  ==> give it its reason beside it (why: {more: ...}), or in a why: of a mapping above it",
]


def _g16(out: str) -> list[str]:
    lines = out.splitlines()
    return [line for i, line in enumerate(lines) if "[G16]" in line or (i and "[G16]" in lines[i - 1])]


def test_strict_warns_of_each_overlay_value_without_a_why(cli, write):
    write("base.yaml", BASE)
    write("overlay.yaml", OVERLAY)
    strict = cli("validate", "overlay.yaml", "--strict", "--no-cache")
    # a value repeated unchanged (sequence-parallel), one with its reason, description: nothing to say
    assert (strict.code, _g16(strict.out)) == (2, WARNINGS)
    plain = cli("validate", "overlay.yaml", "--no-cache")
    assert plain.code == 0 and "[G16]" not in plain.out


def test_a_base_and_a_matrixs_adjust_overlay_are_no_overlays(cli, write):
    write("base.yaml", BASE + "matrix:\n  axes: {big: [false, true]}\n  adjust:\n    big:\n"
          "      match: {big: true}\n      overlay: big.yaml\n")
    write("big.yaml", "args:\n  rollout: {num-rollout: 5}\n")  # extends nothing: a matrix applies it
    assert "[G16]" not in cli("validate", "base.yaml", "--strict", "--no-cache").out


def test_a_reason_above_the_value_or_beside_a_mapping_is_its_reason(cli, write):
    write("base.yaml", BASE)
    write(
        "overlay.yaml",
        "extends: base.yaml\nenv:\n  why: what overlay's kernels read\n  X: '3'\n  Y: '2'\n"
        "args:\n  perf:\n    why: {tensor-model-parallel-size: TP 4 for the bigger batch}\n"
        "    tensor-model-parallel-size: 4\n",
    )
    strict = cli("validate", "overlay.yaml", "--strict", "--no-cache")
    assert "[G16]" not in strict.out, strict.out
