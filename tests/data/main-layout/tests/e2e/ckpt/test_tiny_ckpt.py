"""A checkpoint test shaped as miles main's: save, load that step (--ckpt-step), async save there, load.

MILES_TEST_CKPT_HOSTILE steers what the read value reaches (for the refusals): arithmetic, an env var.
"""

import os

import miles.utils.external_utils.command_utils as U
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=300, suite="stage-c-4-gpu-h200", labels=["ckpt"])

SAVED = "/root/models/tiny_miles"
HOSTILE = os.environ.get("MILES_TEST_CKPT_HOSTILE", "")


def _latest() -> int:
    with open(f"{SAVED}/latest_checkpointed_iteration.txt", encoding="utf-8") as f:
        text = f.read().strip()
    if not text.isdigit():
        raise ValueError(f"Invalid latest checkpoint value: {text}")
    return int(text)


def execute(mode: str, ckpt_step: int | None = None) -> None:
    ckpt_args = "--hf-checkpoint /root/models/Qwen3-4B "
    if mode in ("save", "async_save"):
        ckpt_args += f"--save {SAVED} --save-interval 2 " + ("--async-save " if mode == "async_save" else "")
    else:
        ckpt_args += f"--load {SAVED} --ckpt-step {ckpt_step} "
    train_args = (
        f"{ckpt_args} --prompt-data /root/datasets/p.jsonl --num-rollout 3 --rollout-batch-size 8 "
        "--n-samples-per-prompt 8 --global-batch-size 64 --rollout-num-gpus-per-engine 2 "
        "--actor-num-nodes 1 --actor-num-gpus-per-node 4 --colocate"
    )
    env = {"MILES_TEST_STEP": str(ckpt_step)} if HOSTILE == "env" and ckpt_step else {}
    U.execute_train(
        train_args=train_args, num_gpus_per_node=4, megatron_model_type="qwen3-4B", extra_env_vars=env
    )


if __name__ == "__main__":
    U.exec_command(f"rm -rf {SAVED}")
    execute("save")
    step = _latest()
    execute("load", ckpt_step=step + 1 if HOSTILE == "arithmetic" else step)
    execute("async_save")
    execute("load", ckpt_step=_latest())
