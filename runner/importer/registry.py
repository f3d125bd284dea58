"""CI registrations in the import sandbox: ``register_{cuda,rocm,cpu}_ci`` and ``register_ci_gate``.

A miles test registers itself at module level (``register_cuda_ci(est_time=800, suite=...)``,
``register_ci_gate(metric_key="train/ppo_kl")``). miles' functions do nothing at run time (its
CI parses them out of the file); here each call is recorded with its arguments bound to miles'
signature, and a gate that leaves out ``steps`` or ``constraint`` gets them from the checkout's
own ``GATE_DEFAULTS``, as miles' parser fills them. Without a checkout the calls are recorded
as written. Loaded by path by ``harness.py``; standard library only.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

CI_MODULE = "tests.ci.ci_register"
GATE_MODULES = ("tests.ci.metric_history", "tests.ci.metric_history.register")
CI_FUNCTIONS = ("register_cuda_ci", "register_rocm_ci", "register_cpu_ci")
GATE_FUNCTION = "register_ci_gate"


# miles' signatures (31f1ca96), for a recording without the checkout; ``extra`` takes what other
# versions add (the PR era's num_gpus)
def register_ci(
    est_time: float | None = None,  # required by miles; a recording takes what the script gives
    suite: str | None = None,
    *,
    labels: list[str] | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **extra: Any,
) -> None: ...


def register_ci_gate(
    *,
    metric_key: str,
    steps: str | list[int] | None = None,
    constraint: dict[str, Any] | None = None,
    enforce: bool = False,
    allowlist_reason: str | None = None,
) -> None: ...


def recorder(name: str, real: Callable[..., Any] | None, trace: Any, tracing: Any) -> Callable[..., Any]:
    """``name`` recorded with its arguments, then the real one called (it validates, and does nothing)."""
    signature_of = real or (register_ci_gate if name == GATE_FUNCTION else register_ci)

    def registered(*args: Any, **kwargs: Any) -> Any:
        call = tracing.plain(_flat(signature_of, tracing.arguments(signature_of, args, kwargs)))
        kind = "gate" if name == GATE_FUNCTION else "ci"
        trace.record(kind, name=name, args=call, defaulted=_defaulted(call, trace) if kind == "gate" else [])
        return real(*args, **kwargs) if real is not None else None

    registered.__name__ = registered.__qualname__ = name
    return registered


def _flat(function: Callable[..., Any], call: dict[str, Any]) -> dict[str, Any]:
    """The arguments by name, a ``**kwargs`` parameter's spread out among them."""
    spread = [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_KEYWORD]
    flat = {name: value for name, value in call.items() if name not in spread}
    for name in spread:
        flat |= {key: value for key, value in call.get(name, {}).items() if key not in flat}
    return flat


def _defaulted(call: dict[str, Any], trace: Any) -> list[str]:
    """Fill ``steps``/``constraint`` left out from the checkout's GATE_DEFAULTS; which were filled."""
    filled = []
    for field in ("steps", "constraint"):
        default = trace.gate_defaults.get(call.get("metric_key"), {}).get(field)
        if call.get(field) is None and default is not None:
            call[field] = default
            filled.append(field)
    return filled


def stand_in(module: ModuleType, trace: Any, tracing: Any) -> None:
    """Recording functions on a stand-in module (no checkout): any other name accepts any call."""
    names = CI_FUNCTIONS if module.__name__ == CI_MODULE else (GATE_FUNCTION,)
    for name in names:
        setattr(module, name, recorder(name, None, trace, tracing))


def from_checkout(trace: Any, tracing: Any) -> None:
    """The checkout's registration functions, recording; its GATE_DEFAULTS, for gates that omit a field.
    A checkout without them (older miles) is left alone: the script's import fails as it would."""
    modules = {}
    for name in (CI_MODULE, *GATE_MODULES):
        try:
            modules[name] = importlib.import_module(name)
        except Exception:
            continue
    register = modules.get(GATE_MODULES[1])
    defaults = getattr(register, "GATE_DEFAULTS", None)
    if isinstance(defaults, dict):
        trace.gate_defaults = {k: v for k, v in defaults.items() if isinstance(v, dict)}
    for module_name, module in modules.items():
        names = CI_FUNCTIONS if module_name == CI_MODULE else (GATE_FUNCTION,)
        for name in names:
            real = getattr(module, name, None)
            if callable(real) and inspect.isfunction(real):
                setattr(module, name, recorder(name, real, trace, tracing))
