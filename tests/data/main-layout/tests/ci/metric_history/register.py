"""Metric gate markers with miles main's signature; GATE_DEFAULTS fill what a gate leaves out."""

GATE_DEFAULTS = {
    "train/grad_norm": {
        "steps": "all",
        "constraint": {"rel_up": 0.5, "abs_floor_up": 0.1, "rel_down": 0.8, "abs_floor_down": 0.1},
    },
}


def register_ci_gate(*, metric_key, steps=None, constraint=None, enforce=False, allowlist_reason=None):
    return None
