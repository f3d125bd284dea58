from pathlib import Path

from miles.utils.test_utils.reconfigure_assertions import ReconfigureInfo, assert_reconfigure_events
from tests.e2e.checked._runs import DUMPS, run_training

if __name__ == "__main__":
    run_training("target", tp_size=2)
    healed = ReconfigureInfo(rollout_id=2, healed_cell_indices=[1])
    assert_reconfigure_events(Path(DUMPS) / "target" / "events", expected=[healed])
