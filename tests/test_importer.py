"""run-matrix import, end to end on the GLM-5 pair: the imported specs render what upstream runs.

The oracle is independent of the import: the commands upstream miles runs
(tests/data/upstream/glm5-*.commands.txt, the reference facts) and the hand-written specs
of matrices/ that already reproduce them.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA
from tests.test_upstream_launch import flag_map as numeric_flag_map
from tests.test_upstream_launch import model_args_of_upstream

ROOT = Path(__file__).parents[1]
SCRIPTS = DATA / "import"
NV = SCRIPTS / "test_glm5_744b_a40b_4layer.py"
ROCM = SCRIPTS / "test_glm5_744b_a40b_4layer_rocm.py"
PAIR = [("nv", NV, "h200", "nv/glm5-colocate.yaml"), ("rocm", ROCM, "mi355x", "rocm/glm5-async.yaml")]
BASE = "base/glm5-744b-a40b-4layer.yaml"

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter


@pytest.fixture
def tree(tmp_path: Path, in_repo: Path) -> Path:
    """A copy of the shipped matrices; the current directory is the repository (scripts are named from it)."""
    shutil.copytree(ROOT / "matrices", tmp_path / "matrices")
    return tmp_path / "matrices"


def imported(cli, script: Path, out: Path, *options: str) -> None:
    result = cli("import", str(script.relative_to(ROOT)), "-o", str(out), "--without-checkout", *options)
    assert result.code == 0, result.err


def rendered(cli, spec: Path | str) -> dict[str, dict]:
    result = cli("render", str(spec), "--format", "json")
    assert result.code == 0, result.err
    return {cell["id"].partition("[")[2].rstrip("]"): cell for cell in json.loads(result.out)["cells"]}


def exact_flags(tokens: list[str]) -> dict[str, tuple[str, ...]]:
    """`--flag v1 v2 --switch` -> {flag: (v1, v2), switch: ()}; values as written, no flag twice."""
    flags: dict[str, list[str]] = {}
    for token in tokens:
        if token.startswith("--"):
            assert token[2:] not in flags, f"{token} given twice"
            flags[token[2:]] = []
        else:
            flags[list(flags)[-1]].append(token)
    return {name: tuple(values) for name, values in flags.items()}


def upstream(platform: str) -> dict[str, object]:
    """What upstream runs: ray start's GPUs, and the submission's script, flags and env."""
    lines = (DATA / "upstream" / f"glm5-{platform}.commands.txt").read_text().splitlines()
    ray_start = shlex.split(next(line for line in lines if "ray start --head" in line))
    submit = shlex.split(next(line for line in lines if "ray job submit" in line))
    argv = submit[submit.index("--") + 1 :]
    env = json.loads(next(t for t in submit if t.startswith("--runtime-env-json=")).split("=", 1)[1])
    return {
        "train_script": Path(argv[1]).name,
        "num_gpus": int(ray_start[ray_start.index("--num-gpus") + 1]),
        "model_args": argv[2],
        "train_args": argv[3:],
        "env": env["env_vars"],
    }


@pytest.mark.parametrize(("platform", "script", "hardware", "_"), PAIR)
def test_the_glm5_pair_renders_what_upstream_runs(cli, tree, platform, script, hardware, _):
    imported(cli, script, tree / platform / "imported.yaml", "--hardware", hardware)
    cell = rendered(cli, tree / platform / "imported.yaml")[""]
    expected = upstream(platform)
    assert cell["train_script"] == expected["train_script"]
    assert cell["num_gpus_per_node"] == expected["num_gpus"] == 8
    assert expected["model_args"] == "${MODEL_ARGS[@]}"
    assert cell["model_args"] == model_args_of_upstream()
    assert exact_flags(cell["train_args"]) == exact_flags(expected["train_args"])
    assert list(cell["env"]) == list(expected["env"])  # same names, in miles' order
    # the probe decides on an NVIDIA node; on ROCm it is what upstream's probe prints there (no nvidia-smi)
    assert cell["env"]["NCCL_NVLS_ENABLE"] == ("0" if platform == "rocm" else "${NCCL_NVLS_ENABLE}")
    assert {k: v for k, v in cell["env"].items() if k != "NCCL_NVLS_ENABLE"} == {
        k: v for k, v in expected["env"].items() if k != "NCCL_NVLS_ENABLE"
    }


@pytest.mark.parametrize(("platform", "script", "hardware", "_"), PAIR)
def test_the_glm5_pair_prepares_as_upstream_does(cli, tree, platform, script, hardware, _):
    """Upstream's prepare commands but the config patch, which is plain Python in the script."""
    imported(cli, script, tree / platform / "imported.yaml", "--hardware", hardware)
    commands = rendered(cli, tree / platform / "imported.yaml")[""]["commands"]
    prepared = [c["argv"] for c in commands if c["phase"] == "prepare"]
    lines = (DATA / "upstream" / f"glm5-{platform}.commands.txt").read_text().splitlines()
    assert prepared[:3] == [shlex.split(line) for line in lines[3:6]]
    convert = shlex.split(lines[6].split(" && ", 1)[1].replace("<REPO>", "${MILES_ROOT}"))
    assert convert[0] == "PYTHONPATH=/root/Megatron-LM"  # ours: the step's env, as render --format json shows
    head, tail = convert[1:5], convert[6:]
    assert prepared[3] == [*head, *model_args_of_upstream(), *tail]


@pytest.mark.parametrize(("platform", "script", "hardware", "_"), PAIR)
def test_the_fp8_switch_becomes_an_axis_with_upstreams_fp8_cell(cli, tree, platform, script, hardware, _):
    imported(cli, script, tree / platform / "imported.yaml", "--hardware", hardware)
    cells = rendered(cli, tree / platform / "imported.yaml")
    assert sorted(cells) == ["", "fp8_rollout=true"]
    plain, fp8 = exact_flags(cells[""]["train_args"]), exact_flags(cells["fp8_rollout=true"]["train_args"])
    deepep = (
        {"sglang-moe-a2a-backend": ("deepep",), "sglang-deepep-mode": ("auto",)} if platform == "nv" else {}
    )
    assert fp8 == {**plain, "hf-checkpoint": ("/root/models/GLM-5_4layer_fp8",), **deepep}
    # (upstream adds the DeepEP flags right after --sglang-enable-dp-lm-head; an overlay adds keys at
    # the end of their group, as the hand-written spec's does: flags are compared as a mapping)
    conversion = [c["argv"] for c in cells["fp8_rollout=true"]["commands"] if c["name"] == "fp8"]
    assert conversion == [
        [
            "python",
            "${MILES_ROOT}/tools/convert_hf_to_fp8.py",
            "--model-dir",
            "/root/models/GLM-5_4layer",
            "--save-dir",
            "/root/models/GLM-5_4layer_fp8",
            "--strategy",
            "block",
            "--block-size",
            "128",
            "128",
        ]
    ]


@pytest.mark.parametrize(("platform", "script", "hardware", "hand_written"), PAIR)
def test_imported_over_the_base_is_the_hand_written_overlay(
    cli, tree, golden, platform, script, hardware, hand_written
):
    """With --base, the overlay says what the hand-written one says; only what a script cannot tell differs."""
    out = tree / platform / "imported.yaml"
    imported(cli, script, out, "--base", str(tree / BASE), "--hardware", hardware)
    golden(f"import/{platform}-over-base.yaml", out.read_text())
    for component in sorted((tree / "components").glob(f"{platform}-imported-*.yaml")):
        golden(f"import/{platform}-over-base.{component.name}", component.read_text())
    for cell in ("", "[fp8_rollout=true]"):
        result = cli("diff", f"{tree / hand_written}{cell}", f"{out}{cell}", "--format", "json")
        differences = json.loads(result.out)
        # the config.json patch is a function of the script's own (kept as a note), so its rope_theta copy too
        unseen = {"prepare.patch-config.copy_rope_theta"}
        spec_keys = {d["key"].split(".")[0] for d in differences["differences"] if d["key"] not in unseen}
        # the script's CI registration is data the hand-written spec does not carry
        assert spec_keys <= {"wandb", "requires", "expect", "retry", "ci"}, differences["differences"]
        launch = {d["key"]: (d["a"], d["b"]) for d in differences["launch"]}
        # upstream's ROCm test launches 0.7 where the hand-written spec inherits the base's 0.70
        assert launch == ({"--sglang-mem-fraction-static": ("0.70", "0.7")} if platform == "rocm" else {})


def test_a_second_script_becomes_an_overlay_of_the_first(cli, tree, golden):
    imported(cli, NV, tree / "nv" / "imported.yaml", "--hardware", "h200")
    imported(
        cli,
        ROCM,
        tree / "rocm" / "imported.yaml",
        "--base",
        str(tree / "nv" / "imported.yaml"),
        "--hardware",
        "mi355x",
    )
    overlay = (tree / "rocm" / "imported.yaml").read_text()
    golden("import/rocm-over-nv.yaml", overlay)
    assert "extends: ../nv/imported.yaml\n" in overlay
    assert "    sequence-parallel: !delete\n" in overlay and "  SGLANG_NSA_FORCE_MLA: !delete\n" in overlay
    # NV's FP8 cell adds DeepEP flags; the ROCm one takes them out again
    component = (tree / "components" / "rocm-imported-fp8_rollout-true.yaml").read_text()
    assert component.endswith(
        "args:\n  sglang:\n    sglang-moe-a2a-backend: !delete\n    sglang-deepep-mode: !delete\n"
    )
    ours = rendered(cli, tree / "rocm" / "imported.yaml")
    assert {cell: exact_flags(c["train_args"]) for cell, c in ours.items()} == {
        "": exact_flags(upstream("rocm")["train_args"]),
        "fp8_rollout=true": {
            **exact_flags(upstream("rocm")["train_args"]),
            "hf-checkpoint": ("/root/models/GLM-5_4layer_fp8",),
        },
    }


@pytest.mark.parametrize(("platform", "script", "hardware", "hand_written"), PAIR)
def test_imported_cells_render_as_the_hand_written_cells(cli, tree, platform, script, hardware, hand_written):
    imported(cli, script, tree / platform / "imported.yaml", "--hardware", hardware)
    ours, theirs = rendered(cli, tree / platform / "imported.yaml"), rendered(cli, tree / hand_written)
    assert sorted(ours) == sorted(theirs)
    for cell in ours:
        for key in ("train_script", "num_gpus_per_node", "model_args", "env"):
            assert ours[cell][key] == theirs[cell][key], (cell, key)
        # numbers as numbers: the hand-written ROCm spec inherits 0.70 where the script says 0.7
        assert numeric_flag_map(ours[cell]["train_args"]) == numeric_flag_map(theirs[cell]["train_args"])


def test_the_imported_nv_spec_golden(cli, tree, golden):
    out = tree / "nv" / "imported.yaml"
    imported(cli, NV, out, "--hardware", "h200")
    golden("import/nv.yaml", out.read_text())
    golden(
        "import/nv-imported-fp8_rollout-true.yaml",
        (tree / "components" / "nv-imported-fp8_rollout-true.yaml").read_text(),
    )
    listed = cli("list", str(out), "--format", "json")
    assert [c["id"] for c in json.loads(listed.out)["cells"]] == [
        "nv/imported",
        "nv/imported[fp8_rollout=true]",
    ]
