"""Launch helpers of the stand-in checkout: the execute_train contract of miles-facts §1, for real."""

import datetime
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from miles.utils.misc import exec_command

repo_base_dir = Path(__file__).resolve().parents[3]


def convert_checkpoint(
    model_name,
    megatron_model_type,
    num_gpus_per_node,
    multinode=False,
    num_nodes=None,
    extra_args="",
    dir_dst="/root",
    hf_checkpoint=None,
    megatron_path="/root/Megatron-LM",
):
    source = hf_checkpoint or f"/root/models/{model_name}"
    target = Path(f"{dir_dst}/{model_name}_torch_dist")
    marker = target / "latest_checkpointed_iteration.txt"
    if marker.exists() and marker.read_text().strip() == "release":
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    exec_command(
        f"source {repo_base_dir}/scripts/models/{megatron_model_type}.sh && PYTHONPATH={megatron_path} "
        f"torchrun --nproc-per-node {num_gpus_per_node} {repo_base_dir}/tools/convert_hf_to_torch_dist.py "
        f"${{MODEL_ARGS[@]}} --hf-checkpoint {source} --save {target} {extra_args}"
    )


def hf_download_dataset(full_name, data_dir="/root/datasets"):
    exec_command(
        f"hf download --repo-type dataset {full_name} --local-dir {data_dir}/{full_name.split('/')[1]}"
    )


@dataclass
class ExecuteTrainConfig:
    cuda_core_dump: bool = False
    num_nodes: int = field(default_factory=lambda: int(os.environ.get("SLURM_JOB_NUM_NODES", "1")))
    extra_env_vars: str = ""
    output_dir: str = "/root/shared_data"


def execute_train(
    train_args,
    num_gpus_per_node,
    megatron_model_type,
    train_script="train.py",
    before_ray_job_submit=None,
    extra_env_vars=None,
    config=None,
    megatron_path="/root/Megatron-LM",
):
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    script = train_script if os.path.isabs(train_script) else f"{repo_base_dir}/{train_script}"
    exec_command("pkill -9 sglang; ray stop --force; pkill -9 ray; pkill -9 miles; true")
    exec_command(
        f"ray start --head --node-ip-address {master} --num-gpus {num_gpus_per_node} --disable-usage-stats"
    )
    if before_ray_job_submit is not None:
        before_ray_job_submit()
    env = {"PYTHONPATH": megatron_path, "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    env["NCCL_NVLS_ENABLE"] = os.environ.get("NCCL_NVLS_ENABLE") or str(int(check_has_nvlink()))
    env |= {
        name: os.environ[name] for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME") if name in os.environ
    }
    env |= {"no_proxy": f"127.0.0.1,{master}", "MASTER_ADDR": master, **(extra_env_vars or {})}
    exec_command(
        f'source "{repo_base_dir}/scripts/models/{megatron_model_type}.sh" && '
        f"ray job submit --address=http://127.0.0.1:8265 --runtime-env-json='{json.dumps({'env_vars': env})}' "
        f"-- python3 {script} ${{MODEL_ARGS[@]}} {train_args}"
    )


def check_has_nvlink():
    return int(exec_command("nvidia-smi topo -m | grep -o 'NV[0-9]*' | wc -l", capture_output=True)) > 0


def get_default_wandb_args(test_file, run_name_prefix=None, run_id=None):
    key = os.environ.get("WANDB_API_KEY")
    if not key:
        return ""
    name = Path(test_file).stem
    group = run_id or datetime.datetime.now().strftime("%y%m%d-%H%M%S") + f"-{random.randint(0, 999):03d}"
    return (
        f"--use-wandb --wandb-project miles-{name} --wandb-group {group} --wandb-key '{key}' "
        "--disable-wandb-random-suffix "
    )


def create_run_id():
    """A run's name: the UTC clock and three random digits (miles' form, written here anew)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%y%m%d-%H%M%S") + f"-{random.randint(0, 999):03d}"


def get_bool_env_var(name, default="false"):
    return os.getenv(name, default).lower() in ("true", "1")
