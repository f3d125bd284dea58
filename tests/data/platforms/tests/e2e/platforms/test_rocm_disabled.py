from scripts.run_tiny import train
from tests.ci.ci_register import register_cuda_ci, register_rocm_ci

register_cuda_ci(est_time=600, suite="stage-c-4-gpu-h200", labels=["megatron"])
register_rocm_ci(
    est_time=600, suite="stage-c-4-gpu-mi350", labels=["megatron", "amd"], disabled="hangs on MI350"
)

if __name__ == "__main__":
    train()
