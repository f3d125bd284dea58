"""A test that reads the config.json of a repo it downloads before it launches (native LoRA's
preflight, miles PR 1792): answered from the user's Hugging Face cache, else --hf-config, else
refused naming that option."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import capture
from tests.test_knowledge_checkpoints import QWEN, hf_cache

pytestmark = pytest.mark.allow_subprocess

REPO = "Qwen/Qwen3.5-35B-A3B"
# the shape of PR 1792's preflight: download, look the config up, read its model_type, decide
PREFLIGHT = f"""
import json, os
import miles.utils.external_utils.command_utils as U
U.exec_command("hf download {REPO} --local-dir /root/models/Qwen3.5-35B-A3B")
CONFIG = "/root/models/Qwen3.5-35B-A3B/config.json"
assert os.path.exists(CONFIG), "native LoRA could not load model_type: config.json is missing"
with open(CONFIG) as handle:
    model_type = json.load(handle)["model_type"]
assert model_type in ("qwen3_5_moe", "qwen3_5"), model_type
U.execute_train(train_args=f"--colocate --lr 1e-6 --wandb-group {{model_type}} ", num_gpus_per_node=8,
                megatron_model_type="glm5-744B-A40B_4layer")
"""


@pytest.fixture
def case(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)  # the sandbox reads it as the unprivileged user nobody
    path = tmp_path / "tests" / "test_case.py"
    path.parent.mkdir()
    path.parent.chmod(0o755)
    path.write_text(textwrap.dedent(PREFLIGHT).lstrip())
    return path


def test_a_config_in_the_hf_cache_answers_the_read(case, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    hf_cache(tmp_path / "hf" / "hub", {REPO: QWEN})
    run = capture.record(case, {}, [])
    assert "--wandb-group qwen3_5_moe " in run.calls[0].args["train_args"]


def test_without_a_config_the_failure_it_causes_names_hf_config(case):
    with pytest.raises(SpecError) as error:
        capture.record(case, {}, [])
    assert (
        "test_case.py:5: error [import]: test_case.py cannot be imported: it raises AssertionError: native"
        " LoRA could not load model_type: config.json is missing under the recorder (commands run nothing"
        " there and return no output); before, it looks up /root/models/Qwen3.5-35B-A3B/config.json, which"
        f" `hf download {REPO}` would have written: import does not know its content (not in"
        " miles/import.yaml, nor in your Hugging Face cache (models--Qwen--Qwen3.5-35B-A3B under $HF_HOME/hub"
        f" or ~/.cache/huggingface/hub): pass --hf-config {REPO}=FILE)"
    ) in str(error.value)


def test_without_a_config_reading_it_is_refused_naming_hf_config(case):
    case.write_text(
        case.read_text().replace(
            'assert os.path.exists(CONFIG), "native LoRA could not load model_type: config.json is missing"\n',
            "",
        )
    )
    with pytest.raises(SpecError) as error:
        capture.record(case, {}, [])
    assert (
        "test_case.py:5: error [import]: test_case.py cannot be imported: it reads"
        f" /root/models/Qwen3.5-35B-A3B/config.json, which `hf download {REPO}` would have written"
    ) in str(error.value)
    assert f"pass --hf-config {REPO}=FILE)" in str(error.value)


def test_a_test_that_goes_on_without_the_config_still_imports(case):
    # miles main's run_deepseek_v4.py patches config.json only when it is there
    case.write_text(
        case.read_text()
        .replace(
            'assert os.path.exists(CONFIG), "native LoRA could not load model_type: config.json is missing"',
            "",
        )
        .replace("with open(CONFIG) as handle:", "if os.path.exists(CONFIG):\n  with open(CONFIG) as handle:")
        .replace("    model_type = json.load", "    model_type = json.load")
        .replace('assert model_type in ("qwen3_5_moe", "qwen3_5"), model_type', 'model_type = "none"')
    )
    run = capture.record(case, {}, [])
    assert "--wandb-group none " in run.calls[0].args["train_args"]


def test_hf_config_answers_what_the_cache_does_not(case, tmp_path, cli, monkeypatch):
    given = tmp_path / "qwen.json"
    given.write_text('{"model_type": "qwen3_5"}')
    monkeypatch.chdir(tmp_path)
    result = cli(
        "import", str(case), "-o", "out.yaml", "--hardware", "h200", "--hf-config", f"{REPO}=qwen.json",
        "--without-checkout",
    )
    assert result.code == 0, result.err
    assert "wandb-group: qwen3_5\n" in (tmp_path / "out.yaml").read_text()


def test_hf_config_that_is_no_repo_is_refused_by_the_command_line(case, cli, capsys):
    with pytest.raises(SystemExit) as exited:
        cli("import", str(case), "--hf-config", "qwen.json")
    assert exited.value.code == 2
    assert (
        "argument --hf-config: 'qwen.json' is not REPO=FILE (REPO a Hub repo, ORG/NAME; FILE its config.json)"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "conversion",
    [  # PR 1792's Kimi-K2.5 dequantization (a tool of the checkout), and miles' fp8_cast_bf16 helper
        'U.exec_command_gpu("python /root/miles/tools/convert_kimi_int4_to_bf16.py'
        ' --model-dir /root/models/Qwen3.5-35B-A3B --output-dir /root/models/Qwen3.5-35B-A3B-bf16")',
        'U.fp8_cast_bf16(path_src="/root/models/Qwen3.5-35B-A3B", path_dst="/root/models/Qwen3.5-35B-A3B-bf16")',
    ],
)
def test_a_converted_copy_of_a_download_reads_as_the_download(case, tmp_path, monkeypatch, conversion):
    """The preflight reads the dequantized copy's config.json (Kimi-K2.5's native LoRA test): the same
    model as the download it was made from."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    hf_cache(tmp_path / "hf" / "hub", {REPO: QWEN})
    text = case.read_text().replace('CONFIG = "/root/models/Qwen3.5-35B-A3B/config.json"', "")
    case.write_text(
        text.replace(
            "assert os.path.exists",
            f'{conversion}\nCONFIG = "/root/models/Qwen3.5-35B-A3B-bf16/config.json"\nassert os.path.exists',
        )
    )
    run = capture.record(case, {}, [])
    assert "--wandb-group qwen3_5_moe " in run.calls[0].args["train_args"]
    # a copy of what was not downloaded is no download's
    case.write_text(
        case.read_text()
        .replace("--model-dir /root/models/Qwen3.5-35B-A3B ", "--model-dir /elsewhere ")
        .replace('path_src="/root/models/Qwen3.5-35B-A3B"', 'path_src="/elsewhere"')
    )
    with pytest.raises(SpecError, match=r"config\.json is missing"):
        capture.record(case, {}, [])
