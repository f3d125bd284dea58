from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import SpecError
from runner.launch import programs, shell
from runner.launch.command import CLOSE_STOPS
from runner.launch.render import Context, preset_tokens, render
from runner.launch.script import to_shell
from runner.launch.steps import overridden, program_text
from runner.spec import locate
from schemas.values import flag_tokens
from tests.conftest import DATA
from tests.test_model import MINIMAL, VALID

MATRICES = locate.BUNDLED_MATRICES
SPECS = ["nv/glm5-colocate", "rocm/glm5-async"]


@pytest.mark.parametrize("spec", SPECS)
def test_golden_json(spec: str, golden) -> None:
    launch = render(pipeline.cell(MATRICES / f"{spec}.yaml"))
    golden(f"render/{spec.replace('/', '-')}.json", json.dumps(launch.to_json(), indent=2) + "\n")


@pytest.mark.parametrize("spec", SPECS)
def test_golden_shell(spec: str, golden) -> None:
    launch = render(pipeline.cell(MATRICES / f"{spec}.yaml"))
    golden(f"render/{spec.replace('/', '-')}.sh", to_shell(launch, f"matrices/{spec}.yaml"))


@pytest.mark.parametrize("spec", SPECS)
def test_the_submission_is_one_flag_per_line_and_splits_back_to_its_argv(spec: str) -> None:
    launch = render(pipeline.cell(MATRICES / f"{spec}.yaml"))
    (submit,) = [c for c in launch.commands if c.phase == "submit"]
    block = to_shell(launch, spec).split("# submit: train\n")[1].split("\n\n")[0]
    lines = block.splitlines()
    assert lines[0] == "ray job submit \\"
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    assert all(line.startswith(("  --", "  '--")) for line in lines[1:])
    assert [line for line in lines if line.startswith("  -- ")] == [
        f'  -- python3 "${{MILES_ROOT}}"/{submit.argv[submit.argv.index("--") + 2].rsplit("/", 1)[1]} \\'
    ]
    assert shlex.split(block.replace("\\\n", "")) == list(submit.argv)  # bash joins the lines so
    assert max(len(line) for line in lines if "--runtime-env-json" not in line) < 120


@pytest.mark.allow_subprocess  # python3 runs the patch program as the script gives it
def test_the_config_patch_program_is_written_once_and_read_by_each_step(tmp_path: Path) -> None:
    launch = render(pipeline.cell(MATRICES / "rocm/glm5-async.yaml"))
    script = to_shell(launch, "rocm/glm5-async")
    assert script.count("def patched(") == 1
    (step,) = [line for line in script.splitlines() if line.startswith("python3 - ")]
    assert step.endswith(' --copy-rope-theta <<<"${RUN_MATRIX_PROGRAM_PATCH_HF_CONFIG}"')
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "glm", "rope_parameters": {"rope_theta": 5}}')
    defined = script[script.index("IFS= read") : script.index("RUN_MATRIX_PROGRAM\n\n") + 19]
    ran = subprocess.run(
        [
            "bash",
            "-euo",
            "pipefail",
            "-c",
            defined + step.replace("/root/models/GLM-5_4layer/config.json", str(config)),
        ],
        capture_output=True,
        text=True,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, f"patched {config}\n", "")
    assert json.loads(config.read_text())["model_type"] == "deepseek_v32"


def test_a_dry_run_of_several_cells_names_the_patch_program_once(cli, in_repo) -> None:
    text = cli("run", "rocm/glm5-async", "--dry-run", "--no-preflight").out
    assert text.count("\nrocm/glm5-async") == 1 and "rocm/glm5-async[fp8_rollout=true]  (" in text
    assert "def patched(" not in text
    lines = len(program_text("patch_hf_config").splitlines())
    assert [line for line in text.splitlines() if line.startswith("program: ")] == [
        f"program: run-matrix's runner/patch_hf_config.py ({lines} lines), which steps give python3 on stdin:"
        " not shown here; `run-matrix render --show-programs` prints it in the script, and `render -o DIR`"
        " writes it into each script"
    ]
    assert text.count('<<<"${RUN_MATRIX_PROGRAM_PATCH_HF_CONFIG}"') == 2


@pytest.mark.parametrize("spec", SPECS)
def test_shell_lines_split_back_to_the_same_argv(spec: str) -> None:
    caller = {"WANDB_API_KEY": "not-for-your-eyes", "NCCL_SOCKET_IFNAME": "eth0 'quoted'"}
    launch = render(pipeline.cell(MATRICES / f"{spec}.yaml"), Context(caller_env=caller))
    for command in launch.commands:
        assert shlex.split(command.line) == [f"{k}={v}" for k, v in command.env.items()] + list(command.argv)


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("spec", SPECS)
def test_bash_accepts_the_script(spec: str, tmp_path: Path) -> None:
    caller = {"WANDB_API_KEY": "not-for-your-eyes", "GLOO_SOCKET_IFNAME": "a$b`c\"d'e"}
    script = tmp_path / "launch.sh"
    script.write_text(
        to_shell(render(pipeline.cell(MATRICES / f"{spec}.yaml"), Context(caller_env=caller)), spec)
    )
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.allow_subprocess
def test_bash_expands_references_and_nothing_else(tmp_path: Path) -> None:
    from runner.launch.shell import line

    argv = ["printf", "%s\\n", "--wandb-key", "${WANDB_API_KEY}", "$HOME `x` \"q\" 'y'", "a ${NAME} $b"]
    out = subprocess.run(
        ["bash", "-c", line(argv)],
        env={"WANDB_API_KEY": "k", "NAME": "n"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines() == ["--wandb-key", "k", "$HOME `x` \"q\" 'y'", "a n $b"]


def test_secrets_never_appear(write) -> None:
    caller = {"WANDB_API_KEY": "s3cr3t-key", "HF_TOKEN": "hf_s3cr3t", "NCCL_SOCKET_IFNAME": "eth0"}
    for spec in SPECS:
        launch = render(pipeline.cell(MATRICES / f"{spec}.yaml"), Context(caller_env=caller))
        text = json.dumps(launch.to_json()) + to_shell(launch, spec)
        assert "s3cr3t" not in text
        assert "--wandb-key ${WANDB_API_KEY}" in " ".join(launch.train_args)
        assert launch.env["NCCL_SOCKET_IFNAME"] == "eth0"


def test_wandb_flags_come_between_grpo_and_perf() -> None:
    cell = pipeline.cell(MATRICES / "rocm/glm5-async.yaml")
    args = render(cell, Context(caller_env={"WANDB_API_KEY": "x"})).train_args
    start = args.index("--use-wandb")
    assert args[start - 2 : start] == ("--eps-clip-high", "0.28")
    assert args[start : start + 9] == (
        "--use-wandb",
        "--wandb-project",
        "miles-glm5-async",
        "--wandb-group",
        "rocm-glm5-async",
        "--wandb-key",
        "${WANDB_API_KEY}",
        "--disable-wandb-random-suffix",
        "--pipeline-model-parallel-size",
    )
    assert "--use-wandb" not in render(cell).train_args


def test_miles_root_and_model_args_from_context() -> None:
    cell = pipeline.cell(MATRICES / "rocm/glm5-async.yaml")
    launch = render(cell, Context(miles_root="/src/miles", model_args=["--num-layers", "4"]))
    submit = launch.commands[-1].argv
    assert submit[submit.index("--") + 1 :][:4] == (
        "python3",
        "/src/miles/train_async.py",
        "--num-layers",
        "4",
    )
    assert launch.model_args == ("--num-layers", "4")


def test_prepare_commands_in_order() -> None:
    launch = render(pipeline.cell(MATRICES / "nv/glm5-colocate.yaml"))
    upstream = (DATA / "upstream" / "glm5-nv.commands.txt").read_text().splitlines()
    ours = {c.name: c.line for c in launch.commands}
    assert [c.name for c in launch.commands] == [
        "dirs",
        "model",
        "dataset",
        "patch-config",
        "convert",
        "ray-head",
        "train",
    ]
    assert ours["dirs"] == upstream[3]
    assert ours["model"] == upstream[4]
    assert ours["dataset"] == upstream[5]
    assert upstream[8].endswith(ours["ray-head"])
    convert = shlex.split(
        upstream[6].split(" && ", 1)[1].replace("${MODEL_ARGS[@]}", " ".join(launch.model_args))
    )
    assert shlex.split(ours["convert"].replace("${MILES_ROOT}", "<REPO>")) == convert


@pytest.mark.allow_subprocess
def test_guards_skip_steps_whose_output_is_there(tmp_path: Path) -> None:
    """The script does what its comments say: a step whose output exists is not run again."""
    spec = (
        MINIMAL + f"prepare:\n  model: {{kind: hf-download, repo: o/m, local_dir: {tmp_path}/m}}\n"
        f"  convert: {{kind: convert-torch-dist, hf_checkpoint: {tmp_path}/m, save: {tmp_path}/t}}\n"
    )
    (tmp_path / "spec.yaml").write_text(spec)
    commands = {c.name: c for c in render(pipeline.cell(tmp_path / "spec.yaml")).commands}
    assert commands["model"].shell == f"[ -e {tmp_path}/m ] || hf download o/m --local-dir {tmp_path}/m"
    assert commands["convert"].shell.startswith(
        f"grep -qsx release {tmp_path}/t/latest_checkpointed_iteration.txt || "
    )
    (tmp_path / "m").mkdir()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "latest_checkpointed_iteration.txt").write_text("release\n")
    for name in ("model", "convert"):  # hf and torchrun are not installed here: a guard that fails would show
        subprocess.run(["bash", "-c", commands[name].shell], check=True, env={"PATH": "/usr/bin:/bin"})


def test_convert_fp8_step(write) -> None:
    text = (
        MINIMAL
        + "prepare:\n  fp8: {kind: convert-fp8, model_dir: /m, save_dir: /m_fp8, extra: {strategy: block, block-size: [128, 128]}}\n"
    )
    launch = render(pipeline.cell(write("spec.yaml", text)))
    assert launch.commands[0].argv == (
        "python",
        "${MILES_ROOT}/tools/convert_hf_to_fp8.py",
        "--model-dir",
        "/m",
        "--save-dir",
        "/m_fp8",
        "--strategy",
        "block",
        "--block-size",
        "128",
        "128",
    )


def test_a_conversion_for_another_model_type_takes_that_types_model_args(write) -> None:
    """An FSDP cell (no model type) that converts the checkpoint its Megatron twin loads."""
    fsdp = MINIMAL.replace("model: {type: glm5-744B-A40B_4layer}\n", "")
    step = "{kind: convert-torch-dist, hf_checkpoint: /m, save: /t, model_type: qwen3-0.6B}"
    cell = pipeline.cell(
        write("spec.yaml", fsdp + f"args:\n  misc: {{train-backend: fsdp}}\nprepare:\n  convert: {step}\n")
    )
    twin = pipeline.cell(write("twin.yaml", MINIMAL.replace("glm5-744B-A40B_4layer", "qwen3-0.6B")))
    argv = render(cell).commands[0].argv
    assert argv[4 : 4 + len(preset_tokens(twin))] == preset_tokens(twin)
    assert argv[-4:] == ("--hf-checkpoint", "/m", "--save", "/t")
    assert render(cell).commands[0].env == {"PYTHONPATH": "/root/Megatron-LM"}


def test_a_conversion_may_import_another_megatron(write) -> None:
    step = (
        "{kind: convert-torch-dist, hf_checkpoint: /m, save: /t, megatron_path: '/root/TE:/root/Megatron-LM'}"
    )
    cell = pipeline.cell(write("spec.yaml", MINIMAL + f"prepare:\n  convert: {step}\n"))
    assert render(cell).commands[0].env == {"PYTHONPATH": "/root/TE:/root/Megatron-LM"}


def test_a_conversion_for_an_unknown_model_type_is_an_error_at_its_key(write) -> None:
    step = "{kind: convert-torch-dist, hf_checkpoint: /m, save: /t, model_type: qwen9-1B}"
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", MINIMAL + f"prepare:\n  convert: {step}\n"))
    assert caught.value.problems[0].locations[0].line == 6
    assert "qwen9-1B" in caught.value.problems[0].message


@pytest.mark.parametrize(
    ("kind", "tool", "flags", "skip_if"),
    [
        ("convert-int4", "convert_hf_to_int4_direct.py", ("--model-dir", "--save-dir"), "/out exists"),
        ("convert-nvfp4", "convert_hf_to_nvfp4.py", ("--model-dir", "--save-dir"), "/out exists"),
        ("convert-mxfp8", "convert_hf_to_mxfp8.py", ("--model-dir", "--save-dir"), "/out exists"),
        (
            "dequantize-kimi-int4",
            "convert_kimi_int4_to_bf16.py",
            ("--model-dir", "--output-dir"),
            "/out exists",
        ),
        (
            "cast-fp8-bf16",
            "fp8_cast_bf16.py",
            ("--input-fp8-hf-path", "--output-bf16-hf-path"),
            "/out/model.safetensors.index.json exists",
        ),
    ],
)
def test_each_conversion_runs_the_checkouts_tool_with_its_own_flags(
    write, kind, tool, flags, skip_if
) -> None:
    text = MINIMAL + f"prepare:\n  step: {{kind: {kind}, model_dir: /m, save_dir: /out}}\n"
    command = render(pipeline.cell(write("spec.yaml", text))).commands[0]
    assert command.argv == ("python", f"${{MILES_ROOT}}/tools/{tool}", flags[0], "/m", flags[1], "/out")
    assert command.skip_if == skip_if
    assert command.guard == ("test", "-e", skip_if.removesuffix(" exists"))


@pytest.mark.allow_subprocess  # bash -n reads the shell form
def test_mooncake_master_starts_after_the_head_unless_its_port_answers(write) -> None:
    text = MINIMAL.replace("launch: {", "launch: {before_submit: [mooncake-master], ")
    launch = render(pipeline.cell(write("spec.yaml", text)))
    assert [(c.phase, c.name) for c in launch.commands][-3:] == [
        ("cluster", "ray-head"),
        ("cluster", "mooncake-master"),
        ("submit", "train"),
    ]
    service = launch.commands[-2]
    assert (service.argv, service.listens) == (
        ("mooncake_master", "--rpc_port", "50051", "--metrics_port", "0"),
        50051,
    )
    answers = "(exec 3<>/dev/tcp/127.0.0.1/50051) 2>/dev/null"
    assert service.shell == (
        f"{answers} || {{ ({CLOSE_STOPS}; mooncake_master --rpc_port 50051 --metrics_port 0) & }}\n"
        f"for _ in $(seq 30); do {answers} && break; sleep 1; done\n"
        f"{answers} || {{ echo 'mooncake-master did not answer on 127.0.0.1:50051 within 30 s' >&2; exit 1; }}"
    )
    subprocess.run(["bash", "-n"], input=to_shell(launch, "spec.yaml"), text=True, check=True)


def test_a_remove_step_is_rm_rf_every_time(write) -> None:
    text = (
        MINIMAL
        + "prepare:\n  clean: {kind: remove, paths: [/root/models/G-NVFP4, /root/models/G_torch_dist]}\n"
    )
    command = render(pipeline.cell(write("spec.yaml", text))).commands[0]
    assert command.argv == ("rm", "-rf", "--", "/root/models/G-NVFP4", "/root/models/G_torch_dist")
    assert (command.skip_if, command.guard) == ("", ())
    assert command.shell == "rm -rf -- /root/models/G-NVFP4 /root/models/G_torch_dist"


@pytest.mark.parametrize(
    ("value", "tokens"),
    [(True, ["--x"]), (False, []), (3, ["--x", "3"]), ("a b", ["--x", "a b"]), ([1, "b"], ["--x", "1", "b"])],
)
def test_flag_tokens(value: object, tokens: list[str]) -> None:
    assert flag_tokens("x", value) == tokens


FP8 = ["nv/glm5-colocate[fp8_rollout=true]", "rocm/glm5-async[fp8_rollout=true]"]


@pytest.mark.parametrize("cell_id", FP8)
def test_golden_fp8_cells(cell_id: str, golden) -> None:
    launch = render(pipeline.one(str(MATRICES / cell_id.replace("[", ".yaml["))))
    assert launch.id == cell_id
    name = cell_id.replace("/", "-").replace("[fp8_rollout=true]", "-fp8")
    golden(f"render/{name}.json", json.dumps(launch.to_json(), indent=2) + "\n")


@pytest.mark.parametrize("cell_id", FP8)
def test_fp8_cells_are_upstreams_fp8_variant(cell_id: str) -> None:
    """miles-facts §2: the extra prepare step, the _fp8 checkpoint, and on NVIDIA the DeepEP a2a flags."""
    fp8 = render(pipeline.one(str(MATRICES / cell_id.replace("[", ".yaml["))))
    plain = render(pipeline.one(str(MATRICES / cell_id.split("[")[0]) + ".yaml"))
    step = next(c for c in fp8.commands if c.name == "fp8")
    assert shlex.split(step.line.replace("${MILES_ROOT}", "<REPO>")) == shlex.split(
        "python <REPO>/tools/convert_hf_to_fp8.py --model-dir /root/models/GLM-5_4layer"
        " --save-dir /root/models/GLM-5_4layer_fp8 --strategy block --block-size 128 128"
    )
    assert [c.name for c in fp8.commands if c.phase == "prepare"] == [
        c.name for c in plain.commands if c.phase == "prepare"
    ] + ["fp8"]
    args, before = list(fp8.train_args), list(plain.train_args)
    assert args[args.index("--hf-checkpoint") + 1] == "/root/models/GLM-5_4layer_fp8"
    assert args[args.index("--ref-load") + 1] == "/root/models/GLM-5_4layer_torch_dist"
    added = [t for t in args if t not in before]
    if cell_id.startswith("nv/"):
        assert added == [
            "/root/models/GLM-5_4layer_fp8",
            "--sglang-moe-a2a-backend",
            "deepep",
            "--sglang-deepep-mode",
            "auto",
        ]
    else:
        assert added == ["/root/models/GLM-5_4layer_fp8"]
    assert (fp8.env, fp8.model_args) == (plain.env, plain.model_args)


def test_fsdp_has_no_model_args_and_no_megatron_env(write) -> None:
    fsdp = (
        "hardware: h200\ncluster: {gpus_per_node: 8}\nlaunch: {script: train.py}\n"
        "args:\n  misc: {colocate: true, train-backend: fsdp}\n"
    )
    cell = pipeline.cell(write("spec.yaml", fsdp))
    launch = render(cell)
    assert launch.model_args == ()
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in launch.env
    assert launch.train_args == ("--colocate", "--train-backend", "fsdp")
    assert [p.rule for p in pipeline.problems(cell)] == []


def test_megatron_without_a_model_type_is_g7(write) -> None:
    from runner.errors import SpecError

    with pytest.raises(SpecError) as caught:
        pipeline.problems(
            pipeline.cell(
                write(
                    "spec.yaml",
                    "hardware: h200\ncluster: {gpus_per_node: 8}\n"
                    "launch: {script: train.py}\nargs:\n  misc: {colocate: true}\n",
                )
            )
        )
    assert str(caught.value) == (
        "spec.yaml: error [G7] model.type: the Megatron backend needs model.type: its MODEL_ARGS describe the model\n"
        "  ==> set model.type (a preset in miles/models/), or train-backend: fsdp in args"
    )


@pytest.mark.allow_subprocess  # bash runs the verify job's entrypoint as the node's shell would
def test_a_verify_entry_is_a_job_after_the_train_job_that_calls_the_check_with_its_json(
    write, tmp_path: Path
) -> None:
    args = {"baseline_dir": "/d/base line", "target_dir": "/d/it's", "rtol": 0.01, "key_prefixes": ["train/"]}
    args |= {"pattern": "^a$|b.*$", "out": "$${OUT}/x", "nested": [{"k": "$${OUT}"}, "$(touch pwned)"]}
    text = MINIMAL + "verify:\n  same:\n    call: checks.compare\n    args: " + json.dumps(args) + "\n"
    launch = render(pipeline.cell(write("spec.yaml", text)))
    assert [(c.phase, c.name) for c in launch.commands][-2:] == [("submit", "train"), ("verify", "same")]
    submit, verify = launch.commands[-2:]
    assert verify.argv[: verify.argv.index("--")] == submit.argv[: submit.argv.index("--")]  # same env
    (tmp_path / "checks.py").write_text("import json\ndef compare(**given):\n    print(json.dumps(given))\n")
    entry = shell.line(verify.argv[verify.argv.index("--") + 1 :]).replace("python3", sys.executable, 1)
    node = {**os.environ, "OUT": 'it\'s "quoted" \\ ${HOME}'}  # a value JSON and the shell must not break on
    done = subprocess.run(
        ["bash", "-c", entry], cwd=tmp_path, capture_output=True, text=True, check=True, env=node
    )
    filled = json.loads(
        json.dumps(args).replace("$${OUT}", node["OUT"].replace("\\", "\\\\").replace('"', '\\"'))
    )
    assert json.loads(done.stdout) == filled  # exactly the spec's arguments, each ${OUT} the node's value
    assert not (tmp_path / "pwned").exists()
    # miles' checks fail by assert: with PYTHONOPTIMIZE (a spec's env reaches the job) none could fail
    optimized = {**os.environ, "PYTHONOPTIMIZE": "1"}
    done = subprocess.run(["bash", "-c", entry], cwd=tmp_path, capture_output=True, text=True, env=optimized)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "PYTHONOPTIMIZE is set: the asserts of the function called would not run\n",
    )
    subprocess.run(["bash", "-n"], input=to_shell(launch, "spec.yaml"), text=True, check=True)
    assert "\n# verify: same\nray job submit " in to_shell(launch, "spec.yaml")


def test_a_verify_argument_that_is_no_json_number_is_an_error_at_its_entry(write) -> None:
    text = MINIMAL + "verify:\n  same:\n    call: checks.compare\n    args: {mode: {rtol: [1, .nan]}}\n"
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    (problem,) = caught.value.problems
    assert (problem.key, problem.locations[0].line, problem.message) == (
        "verify.same.args",
        8,
        "mode.rtol[1]: nan is no JSON number: write a finite one",
    )


def test_verify_arguments_over_what_one_command_line_argument_holds_are_an_error(write) -> None:
    text = (
        MINIMAL
        + "verify:\n  same:\n    call: checks.compare\n    args: {keys: ["
        + "'aaaaaaa'," * 9000
        + "]}\n"
    )
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    (problem,) = caught.value.problems
    assert (problem.key, problem.message) == (
        "verify.same.args",
        "90010 bytes as JSON; they travel as one argument of the function's command line, which Linux caps at"
        " 128 KiB: at most 65536 (pass a file's path instead)",
    )


TYPED_CHECK = """\
from __future__ import annotations

import dataclasses, json
from pathlib import Path

from pydantic import BaseModel


@dataclasses.dataclass(frozen=True)
class Mode:
    cells: int


class Event(BaseModel):
    rollout_id: int


def compare(event_dir: Path, mode: Mode, expected: list[Event], rtol: float, loose) -> None:
    got = [event_dir, mode, expected, rtol, loose]
    print(json.dumps([[type(v).__name__ for v in got], str(event_dir), mode.cells, expected[0].rollout_id]))
"""


@pytest.mark.allow_subprocess  # bash runs the verify job's entrypoint as the node's shell would
def test_a_check_gets_its_arguments_converted_by_its_annotations(write, tmp_path: Path) -> None:
    args = {"event_dir": "$${OUT}/events", "mode": {"cells": 4}, "expected": [{"rollout_id": 2}], "rtol": 0}
    text = (
        MINIMAL
        + "verify:\n  same:\n    call: checks.compare\n    args: "
        + json.dumps(args | {"loose": {}})
        + "\n"
    )
    (verify,) = [c for c in render(pipeline.cell(write("spec.yaml", text))).commands if c.phase == "verify"]
    (tmp_path / "checks.py").write_text(TYPED_CHECK)
    entry = shell.line(verify.argv[verify.argv.index("--") + 1 :]).replace("python3", sys.executable, 1)
    node = {**os.environ, "OUT": "/out"}
    done = subprocess.run(
        ["bash", "-c", entry], cwd=tmp_path, capture_output=True, text=True, check=True, env=node
    )
    # the unannotated argument stays what JSON gives; the others become what their annotations name
    assert json.loads(done.stdout) == [["PosixPath", "Mode", "list", "float", "dict"], "/out/events", 4, 2]
    (tmp_path / "checks.py").write_text(TYPED_CHECK.replace("cells: int", "cells: str"))
    done = subprocess.run(["bash", "-c", entry], cwd=tmp_path, capture_output=True, text=True, env=node)
    assert (
        done.returncode == 1
        and "1 validation error for Mode\ncells\n  Input should be a valid string" in done.stderr
    )


@pytest.mark.allow_subprocess  # bash runs the rendered script's comments and nothing else
def test_a_name_with_a_newline_stays_in_its_comment(write, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    name = f'"x\\ntouch {marker} #"'
    text = (
        MINIMAL
        + f"prepare:\n  {name}: {{kind: mkdir, paths: [{tmp_path}/d]}}\n"
        + f"verify:\n  {name}: {{call: checks.compare}}\n"
    )
    script = to_shell(render(pipeline.cell(write("spec.yaml", text))), "spec.yaml")
    assert f"\n# prepare: x\\ntouch {marker} #\nmkdir -p " in script
    assert f"\n# verify: x\\ntouch {marker} #\nray job submit " in script
    comments = "\n".join(line for line in script.splitlines() if not line.strip() or line.startswith("#"))
    subprocess.run(["bash", "-c", comments], check=True)
    assert not marker.exists()


def test_model_args_change_a_preset_value_in_its_place_and_rules_point_at_the_spec(write) -> None:
    spec = write(
        "spec.yaml",
        MINIMAL.replace(
            "model: {type: glm5-744B-A40B_4layer}",
            "model:\n  type: glm5-744B-A40B_4layer\n  args: {num-layers: 2, moe-layer-freq: '[0]*1+[1]*1'}",
        ),
    )
    cell = pipeline.cell(spec)
    plain = preset_tokens(pipeline.cell(write("plain.yaml", MINIMAL)))
    tokens = render(cell).model_args
    assert len(tokens) == len(plain)  # the same flags in the same places
    assert [(a, b) for a, b in zip(plain, tokens, strict=True) if a != b] == [
        ("[0]*3+[1]*1", "[0]*1+[1]*1"),
        ("4", "2"),
    ]
    assert cell.where("num-layers") == cell.location("model", "args", "num-layers")
    # a checkout's own MODEL_ARGS get the same values in their places
    context = Context(model_args=plain)
    assert (
        render(cell, replace(context, model_args=overridden(plain, cell.spec.model.args))).model_args
        == tokens
    )


def test_a_rule_about_a_model_args_value_names_its_key_in_the_spec(write) -> None:
    text = VALID.replace(
        "model: {type: glm5-744B-A40B_4layer}",
        "model:\n  type: glm5-744B-A40B_4layer\n  args: {num-attention-heads: 3}",
    )
    cell = pipeline.cell(write("spec.yaml", text + "  perf: {tensor-model-parallel-size: 2}\n"))
    with pytest.raises(SpecError) as caught:
        pipeline.problems(cell)
    (problem,) = caught.value.problems
    assert problem.rule == "M4"
    assert [(place.key, place.line) for place in problem.locations[1:]] == [
        ("model.args.num-attention-heads", 4)
    ]


def test_model_args_only_change_flags_the_preset_has(write) -> None:
    text = MINIMAL.replace(
        "model: {type: glm5-744B-A40B_4layer}",
        "model:\n  type: glm5-744B-A40B_4layer\n  args:\n    num-layerz: 2",
    )
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    (problem,) = caught.value.problems
    assert (problem.key, problem.locations[0].line) == ("model.args.num-layerz", 5)
    assert problem.message == (
        "the MODEL_ARGS of glm5-744B-A40B_4layer have no --num-layerz: model.args changes a value the preset"
        " sets, in its place"
    )


def test_model_args_without_a_value_says_what_false_and_delete_do_there(write) -> None:
    text = MINIMAL.replace(
        "model: {type: glm5-744B-A40B_4layer}",
        "model:\n  type: glm5-744B-A40B_4layer\n  args:\n    num-layers:",
    )
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    (problem,) = caught.value.problems
    assert (problem.key, problem.locations[0].line) == ("model.args.num-layers", 5)
    assert problem.message == (
        "has no value: write the value the preset's flag should have (false leaves a switch out; !delete goes"
        " back to the preset's value)"
    )


def test_model_args_without_a_model_type_is_an_error_at_its_key(write) -> None:
    text = "hardware: h200\ncluster: {gpus_per_node: 8}\nlaunch: {script: train.py}\n"
    text += "model: {args: {num-layers: 2}}\nargs:\n  misc: {colocate: true, train-backend: fsdp}\n"
    with pytest.raises(SpecError) as caught:
        pipeline.cell(write("spec.yaml", text))
    assert str(caught.value) == (
        "spec.yaml:4: error [model-args] model.args: model.args changes values of model.type's MODEL_ARGS,"
        " and there is no model.type (FSDP)\n  ==> put the flags under args:"
    )


def test_overridden_replaces_a_flags_values_and_keeps_everything_else() -> None:
    words = ("--a", "1", "--b", "x", "y", "--switch", "--c", "-1")
    assert overridden(words, {"b": ["z"], "c": 2, "switch": False}) == ("--a", "1", "--b", "z", "--c", "2")
    assert overridden(words, {}) == words


@pytest.mark.allow_subprocess  # bash runs the verify job's entrypoint as the node's shell would
def test_a_tests_own_check_is_loaded_from_the_checkout_without_its_main_block(write, tmp_path: Path) -> None:
    call = "tests/e2e/own/test_tiny_0.6B_dumped.py:verify"
    text = (
        MINIMAL
        + f"verify:\n  dumps:\n    call: {call}\n    args: {{dump_dir: '$${{OUT}}/dump', samples: 2}}\n"
    )
    launch = render(pipeline.cell(write("spec.yaml", text)))
    verify = launch.commands[-1]
    program = programs.VERIFY_PROGRAM
    entry = verify.argv[verify.argv.index("--") + 1 :]
    assert entry == (
        "python3",
        "-c",
        program,
        call,
        '{"dump_dir":"\\u0024{OUT}/dump","samples":2}',
        "${MILES_ROOT}",
    )
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    shutil.copytree(DATA / "own-checks", root, dirs_exist_ok=True)
    dumps = tmp_path / "out" / "dump" / "rollout_data"
    dumps.mkdir(parents=True)
    (dumps / "0.pt").write_text("")
    line = shell.line(entry).replace("python3", sys.executable, 1)
    node = {**os.environ, "OUT": str(tmp_path / "out"), "MILES_ROOT": str(root)}
    done = subprocess.run(["bash", "-c", line], cwd="/", capture_output=True, text=True, env=node)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr  # its __main__ block would have launched
    assert done.stderr.splitlines()[-1] == (
        f"AssertionError: 1 dumps in {tmp_path}/out/dump, expected 2"  # dump_dir arrived as a Path
    )
    (dumps / "1.pt").write_text("")
    done = subprocess.run(["bash", "-c", line], cwd="/", capture_output=True, text=True, env=node)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.allow_subprocess  # bash runs the hook's lines as the script would, with the checkout's hook
def test_a_hook_of_the_tests_own_is_started_and_waited_for_until_it_returns(write, tmp_path: Path) -> None:
    call = "tests/e2e/own/hooks.py:start_sidecar"
    text = MINIMAL.replace(
        "launch: {script: train.py}", f"launch: {{script: train.py, before_submit: [{call}]}}"
    )
    launch = render(pipeline.cell(write("spec.yaml", text)))
    (hook,) = [c for c in launch.commands if c.name == "start_sidecar"]
    assert (hook.phase, hook.argv, hook.ready) == (
        "cluster",
        ("python3", "-c", programs.HOOK_PROGRAM, call, "{}", "${MILES_ROOT}"),
        "run-matrix: the before_submit hook returned",
    )
    root = tmp_path / "miles"
    shutil.copytree(DATA / "own-checks", root)
    node = {
        **os.environ,
        "MILES_ROOT": str(root),
        "OWN_HOOK_OUT": str(tmp_path / "pid"),
        "TMPDIR": str(tmp_path),
    }

    def script(name: str) -> tuple[int, str, str]:
        lines = hook.shell.replace("start_sidecar", name).replace("python3", sys.executable, 1)
        bash = subprocess.Popen(["bash", "-c", f"{lines}\necho up"], env=node, text=True, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        out, err = bash.communicate(timeout=60)
        with contextlib.suppress(ProcessLookupError):  # the hook and its sidecar stay up, as for a job
            os.killpg(bash.pid, signal.SIGKILL)
        return bash.returncode, out, err

    assert script("start_sidecar") == (0, "up\n", "")
    (log,) = tmp_path.glob("run-matrix-start_sidecar.*")  # a fresh file of mktemp's, under $TMPDIR
    assert log.read_text().endswith("run-matrix: the before_submit hook returned\n")
    code, out, err = script("refuse_to_start")
    (log,) = tmp_path.glob("run-matrix-refuse_to_start.*")
    assert (code, out, err) == (1, "", f"refuse_to_start ended before it returned; its output: {log}\n")


def test_hooks_of_one_name_in_two_files_are_named_apart(write) -> None:
    hooks = "tests/a.py:launch, tests/b.py:launch, tests/b.py:other"
    text = MINIMAL.replace(
        "launch: {script: train.py}", f"launch: {{script: train.py, before_submit: [{hooks}]}}"
    )
    launch = render(pipeline.cell(write("spec.yaml", text)))
    assert [c.name for c in launch.commands if c.ready] == [
        "launch-0",
        "launch-1",
        "other",
    ]  # logs of their own


def test_rocm_cells_set_nccl_nvls_enable_to_0_without_asking_nvidia_smi() -> None:
    amd = render(pipeline.cell(MATRICES / "rocm/glm5-async.yaml"))
    nvidia = render(pipeline.cell(MATRICES / "nv/glm5-colocate.yaml"))
    assert (amd.env["NCCL_NVLS_ENABLE"], amd.probes) == ("0", {})
    script = to_shell(amd, "matrices/rocm/glm5-async.yaml")
    assert "nvidia-smi" not in script and "NCCL_NVLS_ENABLE" not in script.split("ray job submit")[0]
    assert '\\"NCCL_NVLS_ENABLE\\": \\"0\\"' in json.dumps(amd.commands[-1].shell)
    assert (nvidia.env["NCCL_NVLS_ENABLE"], list(nvidia.probes)) == ("${NCCL_NVLS_ENABLE}", ["NCCL_NVLS_ENABLE"])
    caller = render(pipeline.cell(MATRICES / "rocm/glm5-async.yaml"), Context({"NCCL_NVLS_ENABLE": "1"}))
    assert caller.env["NCCL_NVLS_ENABLE"] == "1"  # the caller's value wins there too, as upstream's does
