"""run-matrix import on scripts written for the purpose: a critic, async with a call axis, FSDP,
secrets, file writes, --miles-root, and every reason a script is refused (nothing written).

The oracle for the round trip is the script's own recorded submission, parsed here with shlex —
not by the import's code: for every cell, `render --format json` must equal it.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from runner.errors import SpecError
from runner.importer import Request, capture, import_test
from tests.conftest import DATA
from tests.test_upstream_launch import model_args_of_upstream

ROOT = Path(__file__).parents[1]
SCRIPTS = DATA / "import"
CHECKOUT = DATA / "fake-miles"

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter


@pytest.fixture
def here(tmp_path: Path, in_repo: Path) -> Path:
    tmp_path.chmod(0o755)  # a checkout made here is read by the sandbox as the unprivileged user nobody
    return tmp_path


def run_import(cli, name: str, out: Path, *options: str):
    alone = () if "--miles-root" in options else ("--without-checkout",)  # tests/data is in no checkout
    return cli("import", f"tests/data/import/{name}", "-o", str(out), *alone, *options)


def launches(name: str, switches: dict[str, str]) -> list[dict[str, object]]:
    """What the script submits, one entry per execute_train call, read from the recorded commands
    (made with a W&B key set, which the recording writes as ${WANDB_API_KEY})."""
    run = capture.record(SCRIPTS / name, switches, ["WANDB_API_KEY"])
    found = []
    for call in run.calls:
        start = shlex.split(next(c for c in call.commands if "ray start" in c))
        submit = shlex.split(next(c for c in call.commands if "ray job submit" in c))
        argv = submit[submit.index("--") + 1 :]
        env = next(t for t in submit if t.startswith("--runtime-env-json=")).split("=", 1)[1]
        megatron = argv[2] == "${MODEL_ARGS[@]}"  # FSDP: no MODEL_ARGS at all
        found.append(
            {
                "train_script": Path(argv[1]).name,
                "num_gpus_per_node": int(start[start.index("--num-gpus") + 1]),
                "model_args": model_args_of_upstream() if megatron else [],
                "train_args": flag_map(argv[3:] if megatron else argv[2:]),
                "env": json.loads(env)["env_vars"],
            }
        )
    return found


def flag_map(tokens: list[str]) -> dict[str, tuple[str, ...]]:
    flags: dict[str, list[str]] = {}
    for token in tokens:
        if token.startswith("--"):
            flags[token[2:]] = []
        else:
            flags[list(flags)[-1]].append(token)
    return {name: tuple(values) for name, values in flags.items() if name != "wandb-group"}


def rendered(cli, monkeypatch, spec: Path, wandb: bool = True) -> dict[str, dict]:
    """Each cell's launch as render --format json gives it; with a W&B key set when the script adds W&B
    flags (the recordings have a key; a script that adds none has none to compare)."""
    if wandb:
        monkeypatch.setenv("WANDB_API_KEY", "set")
    result = cli("render", str(spec), "--format", "json")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert result.code == 0, result.err
    return {c["id"].partition("[")[2].rstrip("]"): c for c in json.loads(result.out)["cells"]}


def assert_round_trip(cell: dict, launched: dict) -> None:
    assert cell["train_script"] == launched["train_script"]
    assert cell["num_gpus_per_node"] == launched["num_gpus_per_node"]
    assert cell["model_args"] == launched["model_args"]  # GLM-5's MODEL_ARGS, or none (FSDP)
    assert flag_map(cell["train_args"]) == launched["train_args"]
    probed = {
        name for name, value in cell["env"].items() if value == f"${{{name}}}" and name in cell["probes"]
    }
    assert cell["env"].keys() == launched["env"].keys()
    assert {k: v for k, v in cell["env"].items() if k not in probed} == {
        k: v for k, v in launched["env"].items() if k not in probed
    }


def test_a_critic_colocated_with_the_few_gpu_switch(cli, here, monkeypatch):
    result = run_import(cli, "test_glm5_ppo_critic.py", here / "critic.yaml", "--hardware", "h200")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1] == (
        "2 cells: critic, critic[few_gpu=true]; each renders what the script launches"
    )
    text = (here / "critic.yaml").read_text()
    assert (
        "  grpo:\n    # from ppo_args\n    advantage-estimator: ppo\n" in text
    )  # miles/import.yaml: ppo -> grpo
    assert (
        "  misc:\n    # from critic_args\n    critic-num-nodes: 1\n    critic-num-gpus-per-node: 4\n" in text
    )
    assert "    # written inline in train_args\n    ci-test: true\n" in text
    cells = rendered(cli, monkeypatch, here / "critic.yaml")
    assert_round_trip(cells[""], launches("test_glm5_ppo_critic.py", {})[0])
    assert_round_trip(
        cells["few_gpu=true"], launches("test_glm5_ppo_critic.py", {"MILES_TEST_FEW_GPU": "1"})[0]
    )
    assert cells["few_gpu=true"]["num_gpus_per_node"] == 4
    layout = json.loads(cli("explain", str(here / "critic.yaml"), "--layout", "--format", "json").out)
    assert "critic" in json.dumps(layout)


def test_async_calls_and_fp8_become_two_axes(cli, here, monkeypatch):
    result = run_import(cli, "test_glm5_async_sweep.py", here / "sweep.yaml", "--hardware", "h200")
    assert result.code == 0, result.err
    text = (here / "sweep.yaml").read_text()
    assert "  axes:\n    fp8_rollout: [false, true]\n    update_interval: [1, 2]\n" in text
    assert "  WANDB_API_KEY: $${WANDB_API_KEY}\n" in text  # a reference, never the key
    cells = rendered(cli, monkeypatch, here / "sweep.yaml", wandb=False)
    assert sorted(cells) == [
        "",
        "fp8_rollout=true",
        "fp8_rollout=true,update_interval=2",
        "update_interval=2",
    ]
    plain, fp8 = (
        launches("test_glm5_async_sweep.py", {}),
        launches("test_glm5_async_sweep.py", {"MILES_TEST_USE_FP8_ROLLOUT": "true"}),
    )
    assert_round_trip(cells[""], plain[0])
    assert_round_trip(cells["update_interval=2"], plain[1])
    assert_round_trip(cells["fp8_rollout=true"], fp8[0])
    assert_round_trip(cells["fp8_rollout=true,update_interval=2"], fp8[1])
    assert cells[""]["env"]["WANDB_API_KEY"] == "${WANDB_API_KEY}"
    assert cells[""]["env"]["CUDA_COREDUMP_FILE"] == "/root/shared_data/cuda_coredump_%h.%p.%t"
    assert result.err.splitlines()[-1].endswith(
        "note: the script adds no W&B flags (it never calls get_default_wandb_args); with WANDB_API_KEY set,"
        " run-matrix adds them"
    )


def test_fsdp_without_a_model_type(cli, here, monkeypatch):
    result = run_import(cli, "test_qwen3_fsdp.py", here / "fsdp.yaml", "--hardware", "h200")
    assert result.code == 0, result.err
    text = (here / "fsdp.yaml").read_text()
    assert "\nmodel:" not in text and "    train-backend: fsdp\n" in text
    assert "  axes:\n    few_gpu: [true, false]\n" in text  # the script's default is the few-GPU mode
    cells = rendered(cli, monkeypatch, here / "fsdp.yaml", wandb=False)
    assert_round_trip(cells[""], launches("test_qwen3_fsdp.py", {})[0])
    assert_round_trip(cells["few_gpu=false"], launches("test_qwen3_fsdp.py", {"MILES_TEST_FEW_GPU": "0"})[0])
    assert cells[""]["model_args"] == [] and "CUDA_DEVICE_MAX_CONNECTIONS" not in cells[""]["env"]
    assert (cells[""]["num_gpus_per_node"], cells["few_gpu=false"]["num_gpus_per_node"]) == (2, 4)


def test_miles_mains_conversions_and_the_clean_up_between_launches(cli, here, monkeypatch):
    result = run_import(cli, "test_glm5_conversions.py", here / "conv.yaml", "--hardware", "h200")
    assert result.code == 0, result.err
    spec = yaml.safe_load((here / "conv.yaml").read_text())
    assert spec["launch"]["megatron_path"] == "/root/TransformerEngine:/root/Megatron-LM"
    assert {name: step["kind"] for name, step in spec["prepare"].items()} == {
        "dirs": "mkdir",
        "model": "hf-download",
        "dataset": "hf-download",
        "bf16": "cast-fp8-bf16",
        "clean": "remove",
        "nvfp4": "convert-nvfp4",
        "bf16-2": "dequantize-kimi-int4",
        "convert": "convert-torch-dist",
    }
    assert spec["prepare"]["convert"]["megatron_path"] == "/root/TransformerEngine:/root/Megatron-LM"
    assert (
        "test_glm5_conversions.py:64: note: `ray stop --force || true; pkill -9 sglang || true; sleep 10`"
        in (result.err)
    )
    cells = rendered(cli, monkeypatch, here / "conv.yaml", wandb=False)
    plain = launches("test_glm5_conversions.py", {})
    assert_round_trip(cells[""], plain[0])
    assert_round_trip(cells["update_interval=2"], plain[1])
    assert (
        cells[""]["env"]["PYTHONPATH"] == "/root/TransformerEngine:/root/Megatron-LM"
    )  # the PR era: no checkout


def test_miles_mooncake_hook_becomes_the_launchs_service(cli, here, monkeypatch):
    result = run_import(cli, "test_glm5_mooncake.py", here / "mooncake.yaml", "--hardware", "h200")
    assert result.code == 0, result.err
    assert yaml.safe_load((here / "mooncake.yaml").read_text())["launch"] == {
        "script": "train.py",
        "before_submit": ["mooncake-master"],
    }
    cells = rendered(cli, monkeypatch, here / "mooncake.yaml", wandb=False)
    assert_round_trip(cells[""], launches("test_glm5_mooncake.py", {})[0])
    assert [c["name"] for c in cells[""]["commands"]][-3:] == ["ray-head", "mooncake-master", "train"]


def test_literal_secrets_become_references_and_file_writes_are_not_done(cli, here, monkeypatch):
    home = here / "home"
    (home / "precious").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # the script writes to ~ and deletes ~/precious
    result = run_import(cli, "secrets_and_files.py", here / "s.yaml", "--hardware", "h200")
    assert result.code == 0, result.err
    text = (here / "s.yaml").read_text()
    assert "    wandb-key: $${WANDB_API_KEY}\n" in text and "  HF_TOKEN: $${HF_TOKEN}\n" in text
    assert "0123456789abcdef" not in text + result.out + result.err
    assert "hf_literal_token" not in text + result.out + result.err
    assert [p.name for p in home.iterdir()] == ["precious"]
    notes = [line.split(": note: ", 1)[1] for line in result.err.splitlines() if ": note: " in line]
    assert notes == [
        # the sandbox's HOME is a private one, the caller's neither seen nor touched; said as ${HOME}
        "writes ${HOME}/written-by-import.txt: recorded, not done; a spec does not hold it",
        "shutil.rmtree ${HOME}/precious: recorded, not done; a spec does not hold it",
        "--wandb-key is a literal secret in the script; the spec reads ${WANDB_API_KEY} instead",
        "env HF_TOKEN is a literal secret in the script; the spec reads ${HF_TOKEN}",
        "the script adds no W&B flags (it never calls get_default_wandb_args); with WANDB_API_KEY set,"
        " run-matrix adds them",
    ]


# what a spec's launch.before_submit can name (the end of every refused hook's reason)
HOOK_FORMS = (
    ": a spec's launch.before_submit names miles' own start_mooncake_master or a top-level function of a"
    " test of the checkout (PATH.py:function), with JSON arguments"
)
REFUSED = {
    "refuse_backend_mismatch.py": "6: error [import]: refuse_backend_mismatch.py cannot be imported: it calls"
    " execute_train with megatron_model_type and --train-backend disagreeing (miles asserts that FSDP, and only"
    " FSDP, has no model type)",
    "refuse_reads_run_output.py": "7: error [import]: refuse_reads_run_output.py cannot be imported: it reads"
    " /root/shared_data/ckpt/latest_checkpointed_iteration.txt, which its launch at line 6 would write (--save"
    " /root/shared_data/ckpt), in code of its own: a spec reads a launch's output only as a check's argument"
    " (verify:, a function of miles' or of the test's, called after its launch), as a later launch's flag"
    " ($${read-integer:PATH}), or in the lines after the launches of a function that launched through"
    " functions of its own (verify: launched_by)",
    "refuse_crashes.py": "8: error [import]: refuse_crashes.py cannot be imported: it raises FileNotFoundError:"
    " [Errno 2] No such file or directory: '/nonexistent/models/GLM-5_4layer/config.json' under the recorder"
    " (commands run nothing there and return no output)",
    "refuse_downloads.py": "7: error [import]: refuse_downloads.py cannot be imported: it looks up a host name:"
    " socket.getaddrinfo (huggingface.co 443), outside miles' helpers: nothing may run here",
    "refuse_hook.py": "6: error [import]: refuse_hook.py cannot be imported: it passes execute_train a"
    " before_ray_job_submit hook of its own (<lambda>), which is a lambda, reached by no name" + HOOK_FORMS,
    "refuse_miles_internals.py": "4: error [import]: refuse_miles_internals.py cannot be imported: it imports"
    " miles.utils.misc, which needs miles itself: import with --miles-root DIR (a miles checkout)",
    "refuse_prepare_only.py": " error [import]: refuse_prepare_only.py cannot be imported: it never calls"
    " execute_train when run as `python SCRIPT`: there is no launch to import",
    "refuse_reads_output.py": "7: error [import]: refuse_reads_output.py cannot be imported: it reads the output"
    " of `nvidia-smi -L`, which the recorder cannot know",
    "refuse_spawns_a_process.py": "7: error [import]: refuse_spawns_a_process.py cannot be imported: it starts a"
    " process: subprocess (nvidia-smi -L), outside miles' helpers: nothing may run here",
    "refuse_unknown_helper.py": "7: error [import]: refuse_unknown_helper.py cannot be imported: it uses"
    " command_utils.ssh_start_ray_workers, which the recorder does not stand in for; import with --miles-root"
    " DIR to load miles' own helpers",
    "refuse_spoofed_hook.py": "13: error [import]: refuse_spoofed_hook.py cannot be imported: it passes"
    " execute_train a before_ray_job_submit hook of its own (mine), which a spec names by its path in the"
    " checkout: import with --miles-root" + HOOK_FORMS,
    "refuse_rewritten_hook.py": "13: error [import]: refuse_rewritten_hook.py cannot be imported: it passes"
    " execute_train a before_ray_job_submit hook of its own (start_mooncake_master), which a spec names by its"
    " path in the checkout: import with --miles-root" + HOOK_FORMS,
    "refuse_starts_mooncake.py": "7: error [import]: refuse_starts_mooncake.py cannot be imported: it calls"
    " start_mooncake_master() itself: a spec starts the Mooncake master only as execute_train's"
    " before_ray_job_submit hook (launch.before_submit)",
    "refuse_unknown_prepare.py": "7: error [import]: refuse_unknown_prepare.py cannot be imported: it runs `pip"
    " install flash-attn` before launching, which is no prepare step run-matrix has (mkdir, remove,"
    " hf-download, convert-torch-dist, convert-fp8, convert-int4, convert-nvfp4, convert-mxfp8,"
    " cast-fp8-bf16, dequantize-kimi-int4)",
}


@pytest.mark.parametrize("script", sorted(REFUSED))
def test_refused_scripts_name_the_reason_and_nothing_is_written(cli, here, script):
    result = run_import(cli, script, here / "out.yaml", "--hardware", "h200")
    assert (result.code, result.out) == (2, "")
    assert result.err == f"tests/data/import/{script}:{REFUSED[script]}\n  ==> nothing was written\n"
    assert list(here.iterdir()) == []
    assert list(here.iterdir()) == []


def test_a_flag_given_twice_keeps_its_last_value_as_argparse_does(cli, here):
    out = here / "twice.yaml"
    result = run_import(cli, "flag_given_twice.py", out, "--hardware", "h200")
    assert result.code == 0, result.err
    assert (
        "note: --lr is given twice (1e-6 in optimizer_args, 2e-6 in misc_args); miles' argparse keeps the"
        " last, and so does the spec"
    ) in result.err
    assert re.findall(r"^ +lr: .*$", out.read_text(), re.MULTILINE) == ["    lr: 2e-6"]


def test_a_script_that_never_finishes_is_stopped(here):
    with pytest.raises(SpecError) as error:
        import_test(Request(SCRIPTS / "refuse_waits.py", here / "out.yaml", hardware="h200", timeout=1))
    assert str(error.value).endswith(
        "error [import]: refuse_waits.py cannot be imported: it did not finish within 1 s under the recorder"
        " (does it wait for something?)\n  ==> nothing was written"
    )
    assert list(here.iterdir()) == []


def test_a_script_that_uses_up_its_cpu_time_is_stopped_with_that_reason(here):
    with pytest.raises(SpecError) as error:
        import_test(Request(SCRIPTS / "refuse_spins.py", here / "out.yaml", hardware="h200", timeout=30))
    assert str(error.value).endswith(
        "error [import]: refuse_spins.py cannot be imported: it used up its CPU time under the recorder (at"
        " most 32 s; does it compute without end, or spin waiting for something?)\n  ==> nothing was written"
    )
    assert list(here.iterdir()) == []


def test_miles_root_loads_the_checkouts_helpers_and_runs_none_of_them(cli, here):
    """The stand-in checkout's helpers really run commands: had one run, the sandbox would refuse."""
    (here / "recorded").mkdir()
    (here / "checkout").mkdir()
    name = "test_glm5_744b_a40b_4layer.py"
    assert run_import(cli, name, here / "recorded" / "glm5.yaml", "--hardware", "h200").code == 0
    result = run_import(
        cli, name, here / "checkout" / "glm5.yaml", "--hardware", "h200", "--miles-root", str(CHECKOUT)
    )
    assert result.code == 0, result.err
    assert (here / "checkout" / "glm5.yaml").read_text() == (here / "recorded" / "glm5.yaml").read_text()


def test_a_checkout_without_miles_is_an_environment_problem(cli, here):
    result = run_import(
        cli, "test_glm5_ppo_critic.py", here / "x.yaml", "--hardware", "h200", "--miles-root", str(here)
    )
    assert result.code == 3
    said = result.err.splitlines()[-1]  # after the line that names the checkout
    assert said.startswith(f"run-matrix: cannot load miles' helpers from {here}: ModuleNotFoundError: ")


def test_an_existing_spec_is_replaced_only_with_force(cli, here):
    out = here / "critic.yaml"
    assert run_import(cli, "test_glm5_ppo_critic.py", out, "--hardware", "h200").code == 0
    again = run_import(cli, "test_glm5_ppo_critic.py", out, "--hardware", "h200")
    assert (again.code, again.err) == (2, f"run-matrix: {out} already exists; pass --force to replace\n")
    assert run_import(cli, "test_glm5_ppo_critic.py", out, "--hardware", "h200", "--force").code == 0


def test_hardware_comes_from_the_option_or_the_base(cli, here):
    result = run_import(cli, "test_glm5_ppo_critic.py", here / "x.yaml")
    assert result.code == 2
    known = ", ".join(sorted(p.stem for p in (ROOT / "matrices" / "hardware").glob("*.yaml")))
    assert result.err == (
        "run-matrix: the test does not say which hardware it runs on: pass --hardware NAME"
        f" ({known}), or --base SPEC to take it from a spec\n"
    )


def test_json_output_and_the_default_file_name(cli, here, monkeypatch):
    monkeypatch.chdir(here)
    script = str(SCRIPTS / "test_glm5_ppo_critic.py")
    result = cli("import", script, "--hardware", "h200", "--format", "json", "--without-checkout")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["files"] == ["test_glm5_ppo_critic.yaml", "components/test_glm5_ppo_critic-few_gpu-true.yaml"]
    assert data["cells"] == ["test_glm5_ppo_critic", "test_glm5_ppo_critic[few_gpu=true]"]
    assert (data["axes"], data["switches"]) == ({"few_gpu": [False, True]}, {"MILES_TEST_FEW_GPU": "few_gpu"})
    assert data["warnings"] == []


def test_steps_that_touch_the_system_are_refused_at_their_lines_unless_allowed(cli, here):
    refused = run_import(cli, "refuse_system_steps.py", here / "sys.yaml", "--hardware", "h200")
    assert refused.code == 2 and not (here / "sys.yaml").exists()
    name = "tests/data/import/refuse_system_steps.py"
    assert refused.err.splitlines() == [
        f"{name}:15: error [system-step]: refuse_system_steps.py cannot be imported: it writes"
        " /etc/cron.d/run-matrix-was-here, under /etc (prepare step dirs-2) before launching, which changes the"
        " machine rather than the test's data",
        "  ==> nothing was written; --allow-system-steps runs it anyway",
        f"{name}:16: error [system-step]: refuse_system_steps.py cannot be imported: it removes /etc/ssh, under"
        " /etc (prepare step clean) before launching, which changes the machine rather than the test's data",
        "  ==> nothing was written; --allow-system-steps runs it anyway",
        f"{name}:16: error [system-step]: refuse_system_steps.py cannot be imported: it removes /root/.ssh,"
        " under /root/.ssh (prepare step clean) before launching, which changes the machine rather than the"
        " test's data",
        "  ==> nothing was written; --allow-system-steps runs it anyway",
    ]
    allowed = run_import(
        cli, "refuse_system_steps.py", here / "sys.yaml", "--hardware", "h200", "--allow-system-steps"
    )
    assert allowed.code == 0, allowed.err
    assert f"{name}:16: note: removes /root/.ssh, under /root/.ssh (prepare step clean)" in allowed.err
    ran = cli("run", str(here / "sys.yaml"), "--dry-run")
    assert ran.code == 2 and "[system-step]" in ran.err and "--allow-system-steps" in ran.err


def test_a_spec_path_that_is_a_link_is_refused_and_force_replaces_the_link_not_its_target(cli, here):
    victim = here / "victim.yaml"
    victim.write_text("precious\n")
    (here / "spec.yaml").symlink_to(victim)
    refused = run_import(cli, "flag_given_twice.py", here / "spec.yaml", "--hardware", "h200")
    assert refused.code == 2 and victim.read_text() == "precious\n"
    assert "Traceback" not in refused.err
    forced = run_import(cli, "flag_given_twice.py", here / "spec.yaml", "--hardware", "h200", "--force")
    assert forced.code == 0, forced.err
    assert victim.read_text() == "precious\n" and not (here / "spec.yaml").is_symlink()
