from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import Location, SpecError
from runner.importer.capture import Event
from runner.importer.prepare import steps

ROOT = "/root/miles"
AT = Location(Path("test_x.py"), 7)


def command(text: str) -> Event:
    return Event("command", "exec_command", text, {}, AT)


def test_quantize_tools_by_checkout_path_or_relative_to_it() -> None:
    found = steps(
        [
            command("mkdir -p /root/models /root/datasets"),
            command(
                f"python {ROOT}/tools/convert_hf_to_fp8.py --model-dir /m --save-dir /m-fp8 --strategy block"
            ),
            command("python3 tools/convert_hf_to_int4_direct.py --model-dir /m --save-dir /m-int4"),
        ],
        ROOT,
        "qwen3-30B-A3B",
        "/root/Megatron-LM",
    )
    assert found == {
        "dirs": {"kind": "mkdir", "paths": ["/root/models", "/root/datasets"]},
        "fp8": {
            "kind": "convert-fp8",
            "model_dir": "/m",
            "save_dir": "/m-fp8",
            "extra": {"strategy": "block"},
        },
        "int4": {"kind": "convert-int4", "model_dir": "/m", "save_dir": "/m-int4", "python": "python3"},
    }


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("python tools/convert_hf_to_int4_direct.py --model-dir /m", "(no --model-dir or --save-dir)"),
        ("python tools/convert_hf_to_nvfp4.py --model-dir /m --save-dir /n", ""),
    ],
)
def test_a_quantize_run_holds_no_step_for_is_refused(text: str, why: str) -> None:
    with pytest.raises(SpecError) as caught:
        steps([command(text)], ROOT, None, "/root/Megatron-LM")
    assert caught.value.problems[0].message == (
        f"test_x.py cannot be imported: it runs `{text}`{' ' + why if why else ''} before launching, which is"
        " no prepare step run-matrix has (mkdir, hf-download, convert-torch-dist, convert-fp8, convert-int4)"
    )


def test_a_conversion_for_another_model_type_names_it() -> None:
    """miles' FSDP/Megatron alignment test converts for the Megatron launch before its FSDP ones."""
    convert = Event(
        "helper",
        "convert_checkpoint",
        "",
        {
            "model_name": "Qwen3-0.6B",
            "megatron_model_type": "qwen3-0.6B",
            "num_gpus_per_node": 8,
            "multinode": False,
            "extra_args": "",
            "dir_dst": "/root/models",
            "hf_checkpoint": None,
            "megatron_path": "/root/Megatron-LM",
        },
        AT,
    )
    fsdp = steps([convert], ROOT, None, "/root/Megatron-LM")
    megatron = steps([convert], ROOT, "qwen3-0.6B", "/root/Megatron-LM")
    assert fsdp["convert"] == {**megatron["convert"], "model_type": "qwen3-0.6B"}
    assert "model_type" not in megatron["convert"]


def test_a_file_the_test_writes_is_a_write_file_step_once() -> None:
    written = Event("write", "write", "/tmp/sglang_config_x.yaml", {"text": "sglang: []\n"}, AT)
    assert steps([written, written], ROOT, None, "/root/Megatron-LM") == {
        "file": {"kind": "write-file", "path": "/tmp/sglang_config_x.yaml", "text": "sglang: []\n"}
    }
