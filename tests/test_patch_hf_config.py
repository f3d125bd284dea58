from __future__ import annotations

import json
from pathlib import Path

from runner.patch_hf_config import main, patch

GLM5 = {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32"}


def test_patch_sets_keys_and_copies_rope_theta():
    config = {"model_type": "glm_moe_dsa", "rope_parameters": {"rope_theta": 1000000}}
    assert patch(config, GLM5, copy_rope_theta=True) == {**config, **GLM5, "rope_theta": 1000000}
    assert "rope_theta" not in patch(config, GLM5, copy_rope_theta=False)
    assert patch({**config, "rope_theta": 5}, GLM5, copy_rope_theta=True)["rope_theta"] == 5


def test_main_rewrites_with_indent_2_and_is_idempotent(tmp_path: Path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "glm_moe_dsa"}))
    argv = [str(path), "--set", json.dumps(GLM5), "--unless", '{"model_type": "deepseek_v32"}']
    assert main(argv) == 0
    assert path.read_text() == json.dumps({"model_type": "deepseek_v32", **GLM5}, indent=2) + "\n"
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"patched {path}",
        f"skip: {path} already has {{'model_type': 'deepseek_v32'}}",
    ]


def test_main_skips_an_absent_config(tmp_path: Path, capsys):
    assert main([str(tmp_path / "none.json"), "--set", "{}"]) == 0
    assert capsys.readouterr().out == f"skip: {tmp_path / 'none.json'} does not exist\n"
