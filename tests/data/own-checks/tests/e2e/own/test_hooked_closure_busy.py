import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS


def _start_teacher(gpu):
    raise AssertionError("never called here")


def execute():
    gpus = ["4", "5"]

    def launch_teacher():
        print("starting the teacher")
        _start_teacher(gpus[0])

    U.execute_train(
        train_args=TRAIN_ARGS,
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
        before_ray_job_submit=launch_teacher,
    )


if __name__ == "__main__":
    execute()
