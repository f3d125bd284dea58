import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS


def _start_teacher(gpu="0"):
    raise AssertionError("never called here")


def _start_student(gpu="0"):
    raise AssertionError("never called here")


def execute():
    _start_teacher = _start_student
    gpu = "4"

    def launch_teacher():
        _start_teacher(gpu)

    U.execute_train(
        train_args=TRAIN_ARGS,
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
        before_ray_job_submit=launch_teacher,
    )


if __name__ == "__main__":
    execute()
