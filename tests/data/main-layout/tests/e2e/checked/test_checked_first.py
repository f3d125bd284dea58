from miles.utils.test_utils.session_verify_runner import assert_session_verify_metrics
from tests.e2e.checked._runs import DUMPS, run_training

if __name__ == "__main__":
    assert_session_verify_metrics(f"{DUMPS}/old.jsonl", assistant_text_threshold=0.5)
    run_training("baseline", tp_size=1)
