from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from runner.errors import Location, SpecError
from runner.importer import prepare
from runner.importer.events import Event
from runner.importer.notes import Note, SystemStep

ROOT = "/root/miles"
AT = Location(Path("test_x.py"), 7)
KINDS = (
    "mkdir, remove, hf-download, convert-torch-dist, convert-fp8, convert-int4, convert-nvfp4,"
    " convert-mxfp8, cast-fp8-bf16, dequantize-kimi-int4"
)


def command(text: str) -> Event:
    return Event("command", "exec_command", text, {}, AT)


def steps(events: list[Event], root: str, model_type: str | None, megatron: str) -> dict[str, dict]:
    """The steps of events that need no note."""
    found, notes = prepare.steps(events, root, model_type, megatron)
    assert notes == []
    return found


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
        (
            "python tools/convert_kimi_int4_to_bf16.py --model-dir /m --save-dir /n",
            "(no --model-dir or --output-dir)",
        ),
        ("python tools/convert_torch_dist_to_hf.py --input-dir /m --output-dir /n", ""),
        ("ray stop --force; rm -rf /root/models/x", "(shell syntax: ';')"),
        ("rm -rf /root/models/x;/usr/local/bin/evil", "(shell syntax: ';')"),
        ("rm -rf /root/models/ckpt/*", "(shell syntax: '*')"),
        ("rm -rf /root/models/$(whoami)/x", "(shell syntax: '$')"),
        ("rm -rf -v /root/models/x", "(a remove step is `rm -rf PATH...`)"),
        ("rm -r /root/models/x", "(a remove step is `rm -rf PATH...`)"),
        ("/tmp/evil.sh tools/convert_hf_to_nvfp4.py --model-dir /m/a --save-dir /m/b", ""),
        ("pkill -9 python", ""),
        ("sleep 10", ""),
    ],
)
def test_a_quantize_run_holds_no_step_for_is_refused(text: str, why: str) -> None:
    with pytest.raises(SpecError) as caught:
        steps([command(text)], ROOT, None, "/root/Megatron-LM")
    assert caught.value.problems[0].message == (
        f"test_x.py cannot be imported: it runs `{text}`{' ' + why if why else ''} before launching, which is"
        f" no prepare step run-matrix has ({KINDS})"
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
    elsewhere = {**convert.args, "megatron_path": "/root/TransformerEngine:/root/Megatron-LM"}
    moved = steps([replace(convert, args=elsewhere)], ROOT, "qwen3-0.6B", "/root/Megatron-LM")
    assert moved["convert"] == {
        **megatron["convert"],
        "megatron_path": "/root/TransformerEngine:/root/Megatron-LM",
    }


def test_a_file_the_test_writes_is_a_write_file_step_once() -> None:
    written = Event("write", "write", "/tmp/sglang_config_x.yaml", {"text": "sglang: []\n"}, AT)
    assert steps([written, written], ROOT, None, "/root/Megatron-LM") == {
        "file": {"kind": "write-file", "path": "/tmp/sglang_config_x.yaml", "text": "sglang: []\n"}
    }


def test_every_conversion_tool_of_miles_main_is_a_step_with_its_own_flags() -> None:
    found = steps(
        [
            command("rm -rf /root/models/G-NVFP4 /root/models/G_torch_dist"),
            command(
                "python tools/convert_hf_to_nvfp4.py --model-dir /root/models/G --save-dir /root/models/G-NVFP4 --num-layers-at-start-in-bf16 1"
            ),
            command("python tools/convert_hf_to_mxfp8.py --model-dir /m/J --save-dir /m/J-MXFP8"),
            command(
                f"python {ROOT}/tools/convert_kimi_int4_to_bf16.py --model-dir /m/K --output-dir /m/K-bf16 "
            ),
            Event("helper", "fp8_cast_bf16", "", {"path_src": "/m/D", "path_dst": "/m/D-bf16"}, AT),
        ],
        ROOT,
        "glm5-744B-A40B",
        "/root/Megatron-LM",
    )
    assert found == {
        "clean": {"kind": "remove", "paths": ["/root/models/G-NVFP4", "/root/models/G_torch_dist"]},
        "nvfp4": {
            "kind": "convert-nvfp4",
            "model_dir": "/root/models/G",
            "save_dir": "/root/models/G-NVFP4",
            "extra": {"num-layers-at-start-in-bf16": "1"},
        },
        "mxfp8": {"kind": "convert-mxfp8", "model_dir": "/m/J", "save_dir": "/m/J-MXFP8"},
        "bf16": {"kind": "dequantize-kimi-int4", "model_dir": "/m/K", "save_dir": "/m/K-bf16"},
        "bf16-2": {"kind": "cast-fp8-bf16", "model_dir": "/m/D", "save_dir": "/m/D-bf16"},
    }


@pytest.mark.parametrize(
    "text",
    [
        "ray stop --force || true; pkill -9 sglang || true; sleep 10",
        "ray stop",
        "pkill -9 sglang; sleep 3",
        "pkill -9 sglang; true",
    ],
)
def test_miles_clean_up_between_launches_is_a_note_not_a_step(text: str) -> None:
    found, notes = prepare.steps([command(text)], ROOT, None, "/root/Megatron-LM")
    assert found == {}
    assert notes == [
        Note(
            f"`{text}` clears the node around launches: not a step, since `run` gives each cell a Ray"
            " head of its own and stops it with what its hooks started (and never kills by name)",
            AT,
        )
    ]


@pytest.mark.parametrize(
    "text", ["rm -fr /root/models/x", "rm -r -f -- /root/models/x", "rm -f -r /root/models/x"]
)
def test_rm_rf_in_any_spelling_is_a_remove_step(text: str) -> None:
    assert steps([command("mkdir -p /root/models"), command(text)], ROOT, None, "/root/Megatron-LM") == {
        "dirs": {"kind": "mkdir", "paths": ["/root/models"]},
        "clean": {"kind": "remove", "paths": ["/root/models/x"]},
    }


def test_a_step_the_spec_would_refuse_is_refused_at_the_scripts_line() -> None:
    with pytest.raises(SpecError) as caught:
        steps([command("rm -rf /root")], ROOT, None, "/root/Megatron-LM")
    assert caught.value.problems[0].message == (
        "test_x.py cannot be imported: it runs `rm -rf /root` before launching, which as a remove step is"
        " refused: '/root': a path to remove is absolute and plain (no '..', '.', '//' or trailing '/';"
        " no '$', quotes, globs or control characters), at least two levels below / (/root/models/X, not /root)"
    )


@pytest.mark.parametrize(
    ("events", "what"),
    [
        ([Event("write", "write", "/etc/cron.d/x", {"text": "* * * * * root evil\n"}, AT)], "writes /etc/cron.d/x, under /etc"),
        ([Event("write", "write", "/proc/sysrq-trigger", {"text": "b"}, AT)], "writes /proc/sysrq-trigger, under /proc"),
        ([Event("write", "write", "${HOME}/.ssh/authorized_keys", {"text": "k"}, AT)], "writes ${HOME}/.ssh/authorized_keys, under ${HOME}/.ssh"),
        ([command("rm -rf /etc/ssh /root/.ssh")], "removes /etc/ssh, under /etc"),
        ([command("rm -rf /home/me/project")], "removes /home/me/project, which no step creates or downloads into and no data folder holds"),
        ([command("mkdir -p /dev/sda1/x")], "writes /dev/sda1/x, under /dev"),
    ],
)  # fmt: skip
def test_a_step_that_touches_the_system_is_a_system_step_note_at_the_tests_line(events, what) -> None:
    _, notes = prepare.steps(events, ROOT, None, "/root/Megatron-LM")
    assert isinstance(notes[0], SystemStep) and notes[0].at == AT
    assert notes[0].message.startswith(what + " (prepare step ")


def test_data_steps_are_no_system_steps() -> None:
    found, notes = prepare.steps(
        [
            command("rm -rf /root/models/G_torch_dist"),
            command("mkdir -p /dev/shm/run /root/models"),
            command("rm -rf /root/models/old /dev/shm/run/x"),
            Event("write", "write", "/tmp/sglang_config.yaml", {"text": "x"}, AT),
        ],
        ROOT,
        None,
        "/root/Megatron-LM",
    )
    assert notes == [] and len(found) == 4
