from tests.ci.metric_history.register import register_ci_gate

__all__ = ["register_ci_gate"]
