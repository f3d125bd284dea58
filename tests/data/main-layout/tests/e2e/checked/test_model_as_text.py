from miles.utils.test_utils.reconfigure_assertions import assert_reconfigure_events
from tests.e2e.checked._runs import DUMPS, run_training

if __name__ == "__main__":
    run_training("target", tp_size=2)
    assert_reconfigure_events(f"{DUMPS}/target/events", expected=[])
