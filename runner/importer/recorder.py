"""A stand-in for miles' ``miles.utils.external_utils.command_utils``.

Loaded only inside the import sandbox (``harness.py``, a separate interpreter), under the
helper module's import name; run-matrix itself never imports it for use. Each helper keeps
miles' signature (miles d94ee8cb to dc8b499b): the ones that
would run a command or touch the network record the call instead; ``execute_train`` builds the
commands miles would run (cluster reset, ``ray start``, ``ray job submit``) and records them,
starting nothing. Standard library only.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.importer.recording import begin_train, command_recorder, end_train, recording
from runner.importer.trace import NVLINK_PROBE, TRACE

ROOT = Path("/__miles_root__")  # the miles checkout, as recorded commands name it


# ---- the helpers, with miles' signatures ------------------------------------------------------

repo_base_dir = ROOT
exec_command = command_recorder("exec_command")
exec_command_cpu = command_recorder("exec_command_cpu")
exec_command_gpu = command_recorder("exec_command_gpu")
exec_command_all_ray_node = command_recorder("exec_command_all_ray_node")
exec_command_multi_node = command_recorder("exec_command_multi_node")


def _convert_checkpoint(
    model_name: str,
    megatron_model_type: str,
    num_gpus_per_node: int,
    multinode: bool = False,
    num_nodes: int | None = None,
    extra_args: str = "",
    dir_dst: str = "/root",
    hf_checkpoint: str | None = None,
    megatron_path: str = "/root/Megatron-LM",
) -> None: ...


def _hf_download_dataset(full_name: str, data_dir: str = "/root/datasets") -> None: ...


def _fp8_cast_bf16(path_src: str, path_dst: str) -> None: ...


def _rsync_simple(path_src: str, path_dst: str) -> None: ...


def _save_to_temp_file(text: str, ext: str) -> None: ...


def start_mooncake_master(*args: Any, **kwargs: Any) -> None:
    """miles' before_ray_job_submit hook: as a hook the spec names it (execute_train never calls it
    here); called by the script itself, it starts a service no prepare step starts."""
    raise TRACE.refuse(
        "calls start_mooncake_master() itself: a spec starts the Mooncake master only as execute_train's"
        " before_ray_job_submit hook (launch.before_submit)"
    )


convert_checkpoint = recording("convert_checkpoint", _convert_checkpoint)
hf_download_dataset = recording("hf_download_dataset", _hf_download_dataset)
fp8_cast_bf16 = recording("fp8_cast_bf16", _fp8_cast_bf16)
rsync_simple = recording("rsync_simple", _rsync_simple)
save_to_temp_file = recording("save_to_temp_file", _save_to_temp_file)
HELPERS = ("convert_checkpoint", "hf_download_dataset", "fp8_cast_bf16", "rsync_simple", "save_to_temp_file")


# mutable: as miles' own is (a test may build one and set its fields before execute_train)
@dataclasses.dataclass
class ExecuteTrainConfig:
    cuda_core_dump: bool = False
    num_nodes: int = dataclasses.field(
        default_factory=lambda: int(os.environ.get("SLURM_JOB_NUM_NODES", "1"))
    )
    extra_env_vars: str = ""
    output_dir: str = "/root/shared_data"


def execute_train(
    train_args: str,
    num_gpus_per_node: int,
    megatron_model_type: str | None,
    train_script: str = "train.py",
    before_ray_job_submit: Callable[[], None] | None = None,
    extra_env_vars: dict[str, str] | None = None,
    config: ExecuteTrainConfig | None = None,
    megatron_path: str = "/root/Megatron-LM",
) -> None:
    begin_train(dict(locals()))
    if ("--train-backend fsdp" in train_args) != (megatron_model_type is None):
        end_train()
        raise TRACE.refuse(
            "calls execute_train with megatron_model_type and --train-backend disagreeing (miles asserts"
            " that FSDP, and only FSDP, has no model type)"
        )
    try:
        _launch(
            train_args,
            num_gpus_per_node,
            megatron_model_type,
            train_script,
            extra_env_vars,
            config,
            megatron_path,
        )
    finally:
        end_train()


def _launch(
    train_args: str,
    gpus: int,
    model_type: str | None,
    script: str,
    extra_env: dict[str, str] | None,
    config: ExecuteTrainConfig | None,
    megatron_path: str,
) -> None:
    """The commands execute_train runs (miles-facts §1), recorded in order."""
    script = script if os.path.isabs(script) else f"{ROOT}/{script}"
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    external_ray = get_bool_env_var("MILES_SCRIPT_EXTERNAL_RAY")
    ray = "" if external_ray else "ray stop --force; pkill -9 ray; "
    exec_command(
        f"pkill -9 sglang; sleep 3; {ray}pkill -9 miles; sleep 3; pkill -9 miles; pkill -9 redis; true; "
    )
    if not external_ray:
        exec_command(
            f"export PYTHONBUFFERED=16 && ray start --head --node-ip-address {master} --num-gpus {gpus}"
            " --disable-usage-stats"
        )
    env = _runtime_env(
        master, megatron_path, model_type is None, extra_env or {}, config or ExecuteTrainConfig()
    )
    source = f'source "{ROOT}/scripts/models/{model_type}.sh" && ' if model_type else ""
    address = "" if "RAY_ADDRESS" in os.environ else '--address="http://127.0.0.1:8265" '
    model_args = "${MODEL_ARGS[@]}" if model_type else ""
    if get_bool_env_var("MILES_SCRIPT_ENABLE_RAY_SUBMIT", "1"):
        runtime_env = json.dumps({"env_vars": env})
        exec_command(
            f"export no_proxy=127.0.0.1 && export PYTHONBUFFERED=16 && {source}ray job submit {address}"
            f"--runtime-env-json='{runtime_env}' -- python3 {script} {model_args} {train_args}"
        )


def _runtime_env(
    master: str, megatron_path: str, fsdp: bool, extra: dict[str, str], config: ExecuteTrainConfig
) -> dict[str, Any]:
    env: dict[str, Any] = {"PYTHONPATH": megatron_path}
    if not fsdp:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    env["NCCL_NVLS_ENABLE"] = os.environ.get("NCCL_NVLS_ENABLE") or str(int(_has_nvlink()))
    env.update({k: os.environ[k] for k in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME") if k in os.environ})
    env.update({"no_proxy": f"127.0.0.1,{master}", "MASTER_ADDR": master})
    if config.cuda_core_dump:
        env.update(core_dump_env(config.output_dir))
    env.update(extra)
    env.update(parse_extra_env_vars(config.extra_env_vars))
    return env


def core_dump_env(output_dir: str) -> dict[str, str]:
    return {
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1",
        "CUDA_COREDUMP_SHOW_PROGRESS": "1",
        "CUDA_COREDUMP_GENERATION_FLAGS": "skip_nonrelocated_elf_images,skip_global_memory,"
        "skip_shared_memory,skip_local_memory,skip_constbank_memory",
        "CUDA_COREDUMP_FILE": f"{output_dir}/cuda_coredump_%h.%p.%t",
    }


def parse_extra_env_vars(text: str) -> dict[str, str]:
    """``ExecuteTrainConfig.extra_env_vars``: JSON, or ``NAME=VALUE`` words."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return dict(item.split("=", 1) for item in text.split() if "=" in item)
    return {str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def _has_nvlink() -> bool:
    output = exec_command_gpu(
        f"{NVLINK_PROBE} 2>/dev/null | grep -o 'NV[0-9][0-9]*' | wc -l", capture_output=True
    )
    return int(output or 0) > 0


def check_has_nvlink() -> bool:
    raise TRACE.refuse(
        "asks whether this machine has NVLink (check_has_nvlink): the answer depends on the node"
    )


def get_default_wandb_args(
    test_file: str, run_name_prefix: str | None = None, run_id: str | None = None
) -> str:
    if not os.environ.get("WANDB_API_KEY"):
        return ""
    path = Path(test_file)
    name = path.stem if len(path.stem) >= 6 else f"{path.parent.name}_{path.stem}"
    group = run_id or create_run_id()
    if (commit := os.environ.get("GITHUB_COMMIT_NAME")) is not None:
        group += f"_{commit}"
    if run_name_prefix is not None:
        group = f"{run_name_prefix}_{group}"
    text = (
        f"--use-wandb --wandb-project miles-{name} --wandb-group {group} "
        f"--wandb-key '{os.environ.get('WANDB_API_KEY')}' --disable-wandb-random-suffix "
    )
    TRACE.record("wandb", text=text)
    return text


def create_run_id() -> str:
    return "run-matrix-import"  # miles: a timestamp; the recording must not depend on the clock


def get_bool_env_var(name: str, default: str = "false") -> bool:
    return os.getenv(name, default).lower() in ("true", "1")


def get_env_enable_infinite_run() -> bool:
    return get_bool_env_var("MILES_TEST_ENABLE_INFINITE_RUN", "false")


NUM_GPUS_OF_HARDWARE = {"H100": 8, "GB200": 4, "GB300": 4}
GENERATION_HARDWARE = {"H100": "Hopper", "GB200": "Blackwell", "GB300": "Blackwell"}


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise TRACE.refuse(
        f"uses command_utils.{name}, which the recorder does not stand in for;"
        " import with --miles-root DIR to load miles' own helpers"
    )
