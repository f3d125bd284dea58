"""A gate that leaves its band to miles' GATE_DEFAULTS, which only a checkout has."""

import _glm5
from tests.ci.metric_history import register_ci_gate

register_ci_gate(metric_key="train/grad_norm")

if __name__ == "__main__":
    _glm5.launch()
