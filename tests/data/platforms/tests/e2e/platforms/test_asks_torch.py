import torch
from scripts.amd.run_tiny import train as train_on_amd
from scripts.run_tiny import train
from tests.ci.ci_register import register_cuda_ci, register_rocm_ci

register_cuda_ci(est_time=600, suite="stage-c-4-gpu-h200", labels=["megatron"])
register_rocm_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["megatron", "amd"])

if __name__ == "__main__":
    (train_on_amd if torch.version.hip is not None else train)()
