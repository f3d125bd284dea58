from miles.utils.test_utils.comparisons.metrics import compare_metrics
from tests.e2e.checked._runs import DUMPS, run_training

if __name__ == "__main__":
    run_training("baseline", tp_size=1)
    prefixes: list[object] = ["train/"]
    prefixes.append(prefixes)
    compare_metrics(f"{DUMPS}/baseline", f"{DUMPS}/target", rtol=0, atol=0, key_prefixes=prefixes, exclude_keys=[])
