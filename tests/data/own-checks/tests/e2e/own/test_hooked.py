import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import TRAIN_ARGS


def _start_router():
    raise AssertionError("a hook's body never runs in the import sandbox")


def execute():
    U.execute_train(
        train_args=TRAIN_ARGS,
        num_gpus_per_node=4,
        megatron_model_type="qwen3-4B",
        before_ray_job_submit=_start_router,
    )


if __name__ == "__main__":
    execute()
