import os

from scripts.amd.run_tiny import train
from tests.ci.ci_register import register_rocm_ci

register_rocm_ci(est_time=600, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron", "amd"])

if __name__ == "__main__":
    train(f"--sglang-mem-fraction-static {'0.5' if os.getenv('MILES_HARDWARE_PLATFORM') == 'rocm' else '0.7'} ")
