from __future__ import annotations

import json

import pytest

from runner import pipeline
from runner.errors import SpecError
from runner.spec import locate
from tests.conftest import known_elided

MINIMAL = """
hardware: h200
model: {type: glm5-744B-A40B_4layer}
cluster: {gpus_per_node: 8}
launch: {script: train.py}
"""
# MINIMAL plus what makes it pass every rule: colocated on one 8-GPU node.
VALID = MINIMAL + "args:\n  misc: {colocate: true}\n"


def error_of(write, text: str) -> str:
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL + text))
    return str(caught.value)


def test_minimal_spec(write):
    cell = pipeline.cell(write("spec.yaml", MINIMAL))
    assert (cell.id, cell.profile.name, cell.preset.type) == ("spec", "h200", "glm5-744B-A40B_4layer")
    assert cell.spec.args.flags() == {}


def test_unknown_top_level_key_suggests(write):
    assert error_of(write, "lanch: {}\n") == (
        "spec.yaml:5: error [unknown-key] lanch: unknown key 'lanch'\n  ==> did you mean 'launch'?"
    )


def test_unknown_group_suggests(write):
    assert error_of(write, "args:\n  pref: {tensor-model-parallel-size: 1}\n") == (
        "spec.yaml:6: error [unknown-key] args.pref: unknown key 'pref'\n  ==> did you mean 'perf'?"
    )


def test_unknown_key_inside_a_prepare_step(write):
    assert error_of(
        write, "prepare:\n  m: {kind: hf-download, repo: a/b, local_dir: /x, repo_typ: model}\n"
    ) == (
        "spec.yaml:6: error [unknown-key] prepare.m.repo_typ: unknown key 'repo_typ'\n"
        "  ==> did you mean 'repo_type'?"
    )


def test_every_unknown_key_is_reported(write):
    assert error_of(write, "lanch: {}\nargz: {}\n").count("[unknown-key]") == 2


def test_wrong_literal(write):
    text = MINIMAL.replace("train.py", "train_sync.py")
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    assert str(caught.value) == (
        "spec.yaml:4: error [type] launch.script: Input should be 'train.py' or 'train_async.py',"
        " got 'train_sync.py'"
    )


def test_wrong_type_points_at_the_line(write):
    text = MINIMAL.replace("gpus_per_node: 8", "gpus_per_node: eight")
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    assert str(caught.value) == (
        "spec.yaml:3: error [type] cluster.gpus_per_node: Input should be a valid integer, got 'eight'"
    )


def test_true_is_no_gpu_count(write):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("gpus_per_node: 8", "gpus_per_node: true")))
    assert str(caught.value) == (
        "spec.yaml:3: error [type] cluster.gpus_per_node: Input should be a valid integer, got True"
    )


def test_missing_required_key(write):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("launch: {script: train.py}", "")))
    assert str(caught.value) == "spec.yaml: error [missing-key] launch: 'launch' is required"


def test_flag_written_with_dashes(write):
    assert error_of(write, "args:\n  perf: {--tensor-model-parallel-size: 1}\n") == (
        "spec.yaml:6: error [type] args.perf.--tensor-model-parallel-size: '--tensor-model-parallel-size'"
        " is not a flag name: write it without the leading --, e.g. 'tensor-model-parallel-size'"
    )


def test_a_flag_name_ending_on_a_newline_is_no_flag_name(write):
    assert error_of(write, 'args:\n  perf: {"sequence-parallel\\n": true}\n') == (
        "spec.yaml:6: error [type] args.perf.sequence-parallel\n: 'sequence-parallel\\n'"
        " is not a flag name: write it without the leading --, e.g. 'tensor-model-parallel-size'"
    )


def test_flag_without_value(write):
    assert error_of(write, "args:\n  perf:\n    sequence-parallel:\n") == (
        "spec.yaml:7: error [type] args.perf.sequence-parallel: has no value: write true for a switch,"
        " or false / !delete to leave it out"
    )


@pytest.mark.parametrize("name", ["BAD NAME", "X=Y", "A;touch x", "1ST", "", "\u00e9T\u00c9", "A\n"])
def test_env_names_are_names(write, name):
    written = json.dumps(name)  # YAML reads a JSON string as the same text
    assert error_of(write, f"env:\n  {written}: '1'\n  GOOD_NAME: '1'\n") == (
        f"spec.yaml:6: error [type] env.{name}: {name!r} is not an environment variable name:"
        " letters, digits and _, not starting with a digit (e.g. MILES_LOG_LEVEL)"
    )


def test_env_values_are_text(write):
    assert error_of(write, "env:\n  FLAG: yes\n") == (
        "spec.yaml:6: error [type] env.FLAG: environment values are text; True reads as bool: quote it"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/root",
        "/root/../etc/x",
        "root/models/x",
        "/root/models/../../etc",
        "/tmp/x/$${X}",  # a shell reference: rm would get what it expands to
        "/\u0000/usr",  # bash drops the NUL: rm -rf //usr
        "/tmp/x/link/",  # rm -rf link/ empties what the link points to
        "/tmp/x/a/.",
        "//usr/lib",
        "/root/models/a b",
        "/root/models/*",
    ],
)
def test_a_remove_step_refuses_what_is_not_a_plain_deep_absolute_path(write, path):
    text = f"prepare:\n  clean: {{kind: remove, paths: [/root/models/a, {json.dumps(path)}]}}\n"
    shown = path.replace("$$", "$")  # as the spec resolves it
    assert error_of(write, text) == (
        f"spec.yaml:6: error [type] prepare.clean.paths: {shown!r}: a path to remove is absolute and plain"
        " (no '..', '.', '//' or trailing '/'; no '$', quotes, globs or control characters), at least two"
        " levels below / (/root/models/X, not /root)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "launch: {script: train.py, megatron_path: ''}\n",
            "launch.megatron_path: '': each PYTHONPATH entry is an absolute path (or a ${...} reference), got ''",
        ),
        (
            "launch: {script: train.py, megatron_path: '/root/TE:.'}\n",
            "launch.megatron_path: '/root/TE:.': each PYTHONPATH entry is an absolute path (or a ${...}"
            " reference), got '.'",
        ),
        (
            "launch: {script: train.py, before_submit: [mooncake-master, mooncake-master]}\n",
            "launch.before_submit: mooncake-master named twice: a service or hook is started once",
        ),
        (
            "launch: {script: train.py, before_submit: [mooncake-mastr]}\n",
            "launch.before_submit: 'mooncake-mastr' is no service run-matrix starts (mooncake-master) and no"
            " PATH.py:function (a hook a test of the checkout defines)",
        ),
        (
            "launch: {script: train.py, before_submit: ['../hooks.py:start']}\n",
            "launch.before_submit: '../hooks.py:start' leaves the checkout (..): name a file inside it, relative"
            " to its root",
        ),
        (
            "launch: {script: train.py, before_submit: ['tests/hooks.py:$(reboot)']}\n",
            "launch.before_submit: 'tests/hooks.py:$(reboot)' names no function after the colon ('$(reboot)' is"
            " no Python name)",
        ),
    ],
)
def test_launch_paths_and_services_are_checked(write, text, message):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("launch: {script: train.py}\n", text)))
    assert str(caught.value.problems[0]).split(" error [type] ", 1)[1] == message


def test_unknown_prepare_kind(write):
    assert error_of(write, "prepare:\n  m: {kind: download}\n") == (
        "spec.yaml:6: error [type] prepare.m: Input tag 'download' found using 'kind' does not match any"
        " of the expected tags: 'write-file', 'mkdir', 'remove', 'hf-download', 'patch-hf-config',"
        " 'convert-torch-dist', 'convert-fp8', 'convert-int4', 'convert-nvfp4', 'convert-mxfp8',"
        " 'cast-fp8-bf16', 'dequantize-kimi-int4', 'call', got {'kind': 'download'}"
    )


def test_unknown_hardware_suggests(write):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("h200", "h2000")))
    assert known_elided(str(caught.value)) == (
        "spec.yaml:1: error [unknown-name] hardware: no hardware profile named 'h2000'"
        " (known: ...)\n  ==> did you mean 'h200'?"
    )


def test_missing_hardware(write):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("hardware: h200", "")))
    assert str(caught.value) == (
        "spec.yaml: error [missing-key] hardware: 'hardware' is required: the name of a profile in"
        " matrices/hardware/"
    )


def test_unknown_model_preset(write):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("glm5-744B-A40B_4layer", "glm5-4layer")))
    assert str(caught.value) == (
        "spec.yaml:2: error [unknown-name] model.type: no model preset named 'glm5-4layer'"
        "\n  ==> did you mean 'glm5-744B-A40B_4layer'?"
    )


def test_a_local_hardware_profile_wins(write):
    profile = locate.BUNDLED_MATRICES / "hardware" / "mi355x.yaml"
    write("hardware/mi999x.yaml", f"extends: {profile}\nname: mi999x\ngpus_per_node: 4\n")
    cell = pipeline.cell(
        write("spec.yaml", MINIMAL.replace("h200", "mi999x").replace("8}", "'${profile.gpus_per_node}'}"))
    )
    assert (cell.profile.name, cell.spec.cluster.gpus_per_node) == ("mi999x", 4)


def test_profile_file_and_name_must_agree(write):
    profile = locate.BUNDLED_MATRICES / "hardware" / "mi355x.yaml"
    write("hardware/mi999x.yaml", f"extends: {profile}\n")
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL.replace("h200", "mi999x")))
    assert str(caught.value) == (
        "hardware/mi999x.yaml: error [unknown-name] name: profile file mi999x.yaml names itself 'mi355x'\n"
        "  ==> rename the file or set name: mi999x"
    )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            "    call: ../prepare.py:prepare\n",
            "spec.yaml:8: error [type] prepare.own.call: '../prepare.py:prepare' leaves the checkout (..): name a"
            " file inside it, relative to its root",
        ),
        (
            "    call: /root/miles/tests/test_x.py:prepare\n",
            "spec.yaml:8: error [type] prepare.own.call: '/root/miles/tests/test_x.py:prepare' is an absolute"
            " path: name the file relative to the checkout's root (tests/e2e/...)",
        ),
        (
            "    call: miles.utils.test_utils.prepare\n",
            "spec.yaml:8: error [type] prepare.own.call: 'miles.utils.test_utils.prepare' is no PATH.py:function:"
            " a prepare step of kind call is a function a test of the checkout defines",
        ),
        (
            "    call: tests/test_x.py:prepare\n    args:\n      path: /tmp/x\n      scale: [1, .nan]\n",
            "spec.yaml:9: error [type] prepare.own.args: scale[1]: nan is no JSON number: write a finite one",
        ),
        (
            "    call: tests/test_x.py:prepare\n    arg: {path: /tmp/x}\n",
            "spec.yaml:9: error [unknown-key] prepare.own.arg: unknown key 'arg'\n  ==> did you mean 'args'?",
        ),
        ("", "spec.yaml:6: error [missing-key] prepare.own.call: 'call' is required"),
    ],
)
def test_a_prepare_call_names_a_tests_own_function_with_json_arguments(write, lines, message):
    """The step's key ``call`` is also its tag: the error is at the key, not at ``call.call``."""
    assert error_of(write, f"prepare:\n  own:\n    kind: call\n{lines}") == message


def test_a_prepare_call_keeps_its_call_and_arguments(write):
    text = "prepare:\n  own:\n    kind: call\n    call: tests/e2e/long/test_q_0.6B.py:prepare\n    args: {n: 2}\n"
    step = pipeline.cell(write("spec.yaml", MINIMAL + text)).spec.prepare["own"]
    assert (step.kind, step.call, step.args) == ("call", "tests/e2e/long/test_q_0.6B.py:prepare", {"n": 2})


def test_a_spec_s_ci_labels_are_github_label_safe(write):
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL + 'ci: {runs_on: "gpu-1\\nmalicious: true"}\n'))
    assert str(caught.value).startswith(
        "spec.yaml:5: error [type] ci.runs_on: a CI label is letters, digits, '.', '_' and '-'"
    )
