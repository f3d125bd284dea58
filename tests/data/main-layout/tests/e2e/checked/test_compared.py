from pathlib import Path

from miles.utils.test_utils.comparisons.metrics import compare_metrics
from miles.utils.test_utils.session_verify_runner import assert_session_verify_metrics
from tests.ci.ci_register import register_cuda_ci
from tests.e2e.checked._runs import DUMPS, run_training

register_cuda_ci(est_time=300, suite="stage-c-4-gpu-h200", labels=["megatron"])

if __name__ == "__main__":
    run_training("baseline", tp_size=1)
    assert_session_verify_metrics(f"{DUMPS}/baseline/session.jsonl", assistant_text_threshold=0.25)
    run_training("target", tp_size=2)
    compare_metrics(
        f"{DUMPS}/baseline",
        f"{DUMPS}/target",
        rtol=1e-2,
        atol=1e-8,
        key_prefixes=["train/"],
        exclude_keys=[],
    )
    compare_metrics(
        f"{DUMPS}/baseline", f"{DUMPS}/target", rtol=0.0, atol=0.0, key_prefixes=["perf/"], exclude_keys=[]
    )
    print("compared", Path(DUMPS).name)
