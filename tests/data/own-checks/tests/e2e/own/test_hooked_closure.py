import os

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS


def _start_teacher(gpu, port=13141):
    raise AssertionError("a hook's body never runs in the import sandbox")


def execute():
    gpu = "4"
    teacher = None
    os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"

    def launch_teacher():
        nonlocal teacher
        teacher = _start_teacher(gpu, port=13142)

    U.execute_train(
        train_args=TRAIN_ARGS,
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
        before_ray_job_submit=launch_teacher,
    )


if __name__ == "__main__":
    execute()
