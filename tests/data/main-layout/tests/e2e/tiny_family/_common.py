"""What the tiny family's cases share: a CaseConfig, prepare() and the launch built from it."""

import os
from dataclasses import dataclass, field

import miles.utils.external_utils.command_utils as U
from miles.utils.settings import log_level

MODEL_NAME = "Qwen3-4B"
MODEL_TYPE = "qwen3-4B"
EVAL = bool(int(os.environ.get("MILES_TEST_TINY_EVAL", "0")))


@dataclass
class CaseConfig:
    num_gpus_per_node: int
    tp_size: int
    rollout_num_gpus_per_engine: int
    use_deepep: bool = False
    extra_args: str = ""
    extra_env_vars: dict[str, str] = field(default_factory=dict)


def prepare(case: CaseConfig) -> None:
    U.exec_command("mkdir -p /root/models /root/datasets")
    U.exec_command(f"hf download Qwen/{MODEL_NAME} --local-dir /root/models/{MODEL_NAME}")
    U.hf_download_dataset("zhuzilin/dapo-math-17k")


def build_train_args(case: CaseConfig) -> str:
    ckpt_args = f"--hf-checkpoint /root/models/{MODEL_NAME} --megatron-to-hf-mode bridge "
    rollout_args = (
        "--prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl --input-key prompt "
        "--label-key label --num-rollout 2 --rollout-batch-size 8 --n-samples-per-prompt 8 "
        "--global-batch-size 64 "
    )
    perf_args = f"--tensor-model-parallel-size {case.tp_size} --max-tokens-per-gpu 4096 "
    sglang_args = f"--rollout-num-gpus-per-engine {case.rollout_num_gpus_per_engine} "
    if case.use_deepep:
        sglang_args += "--sglang-moe-a2a-backend deepep "
    misc_args = f"--actor-num-nodes 1 --actor-num-gpus-per-node {case.num_gpus_per_node} --colocate "
    return f"{ckpt_args}{rollout_args}{perf_args}{sglang_args}{misc_args}{case.extra_args}"


def execute(case: CaseConfig) -> None:
    assert log_level()
    U.execute_train(
        train_args=build_train_args(case),
        num_gpus_per_node=case.num_gpus_per_node,
        megatron_model_type=MODEL_TYPE,
        extra_env_vars=case.extra_env_vars,
    )
