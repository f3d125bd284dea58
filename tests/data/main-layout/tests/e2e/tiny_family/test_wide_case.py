from tests.ci.ci_register import register_cuda_ci
from tests.ci.metric_history import register_ci_gate
from tests.e2e.tiny_family._common import CaseConfig, execute, prepare

register_cuda_ci(est_time=700, suite="stage-c-8-gpu-h200", labels=["megatron"])

register_ci_gate(metric_key="train/grad_norm")

CASE = CaseConfig(num_gpus_per_node=8, tp_size=8, rollout_num_gpus_per_engine=4)

if __name__ == "__main__":
    prepare(CASE)
    execute(CASE)
