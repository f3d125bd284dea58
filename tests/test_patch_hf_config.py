"""The config.json patch: ours, in-process and as the program a rendered script runs.

The expected files are what miles' GLM-5 tests write (tests/e2e/megatron/
test_glm5_744b_a40b_4layer{,_rocm}.py at dc8b499b: the NVIDIA one patches unless
model_type is deepseek_v32; the ROCm one also copies rope_parameters.rope_theta to the
top level; both write json.dump(indent=2, ensure_ascii=False)); tools/compare_config_patch.py
runs upstream's own functions on the same files with a checkout.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from runner import pipeline
from runner.launch.render import render
from runner.patch_hf_config import main, patched
from runner.spec import locate

MATRICES = locate.BUNDLED_MATRICES
GLM5 = {
    "architectures": ["DeepseekV32ForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_deepseek_v32.DeepseekV32Config",
        "AutoModelForCausalLM": "modeling_deepseek_v32.DeepseekV32ForCausalLM",
    },
    "model_type": "deepseek_v32",
}
UNLESS = {"model_type": "deepseek_v32"}
# sample config.json files: name -> (text, what the NVIDIA test leaves, what the ROCm test leaves)
V5 = {
    "architectures": ["GlmMoeDsaForCausalLM"],
    "model_type": "glm_moe_dsa",
    "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"},
    "name": "GLM-5 ✓",
}
V4 = {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "rope_theta": 1e6}
PATCHED_V5 = {**V5, **GLM5}
SAMPLES = {
    "transformers-v5": (V5, PATCHED_V5, {**PATCHED_V5, "rope_theta": 1e6}),
    "transformers-v4": (V4, {**V4, **GLM5}, {**V4, **GLM5}),
    "patched-before-rope": (PATCHED_V5, None, {**PATCHED_V5, "rope_theta": 1e6}),
    "done": ({**PATCHED_V5, "rope_theta": 1e6}, None, None),
}


def _expected(config: dict | None) -> str | None:
    return None if config is None else json.dumps(config, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("sample", SAMPLES)
def test_patched_equals_upstream(sample: str) -> None:
    config, nv, rocm = SAMPLES[sample]
    assert patched(config, GLM5, UNLESS, copy_rope_theta=False) == nv
    assert patched(config, GLM5, UNLESS, copy_rope_theta=True) == rocm


def test_a_top_level_rope_theta_is_kept() -> None:
    assert patched({**V5, "rope_theta": 5}, GLM5, UNLESS, copy_rope_theta=True)["rope_theta"] == 5  # type: ignore[index]
    assert patched({"rope_parameters": [1]}, {}, {}, copy_rope_theta=True) is None


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("spec", ["nv/glm5-colocate", "rocm/glm5-async"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_the_rendered_step_runs_without_run_matrix(spec: str, sample: str, tmp_path: Path) -> None:
    """The script's own command, in a bare python3 -I that cannot import run-matrix."""
    config, nv, rocm = SAMPLES[sample]
    path = tmp_path / "config.json"
    original = json.dumps(config)
    path.write_text(original, encoding="utf-8")
    step = next(
        c for c in render(pipeline.cell(MATRICES / f"{spec}.yaml")).commands if c.name == "patch-config"
    )
    argv = [step.argv[0], "-I", *step.argv[1:]]
    argv[argv.index("/root/models/GLM-5_4layer/config.json")] = str(path)
    done = subprocess.run(
        argv, input=step.stdin, text=True, capture_output=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr
    expected = _expected(rocm if spec.startswith("rocm") else nv)
    assert path.read_text(encoding="utf-8") == (original if expected is None else expected)
    assert done.stdout == (f"skip: {path} is already patched\n" if expected is None else f"patched {path}\n")


def test_main_skips_an_absent_config(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "none.json"), "--set", "{}"]) == 0
    assert capsys.readouterr().out == f"skip: {tmp_path / 'none.json'} does not exist\n"
