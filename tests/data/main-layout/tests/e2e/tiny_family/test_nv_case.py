from tests.ci.ci_register import register_cuda_ci
from tests.ci.metric_history import register_ci_gate
from tests.e2e.tiny_family._common import CaseConfig, execute, prepare

register_cuda_ci(est_time=599.5, suite="stage-c-8-gpu-h200", labels=["megatron"], nightly=True)

register_ci_gate(metric_key="train/grad_norm")
register_ci_gate(
    metric_key="perf/step_time",
    steps=[0, 2],
    constraint={"rel_up": 0.2, "rel_down": 0.5, "abs_floor_down": 1e-06},
    enforce=True,
)

CASE = CaseConfig(num_gpus_per_node=8, tp_size=4, rollout_num_gpus_per_engine=8, use_deepep=True)

if __name__ == "__main__":
    prepare(CASE)
    execute(CASE)
