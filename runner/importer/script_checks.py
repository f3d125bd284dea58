"""The test's own checks of a run's output, in the import sandbox: recorded for the spec's ``verify:``.

miles' disk-offload and verifiers tests call a function of their own file once ``execute_train``
returns (``_assert_offloaded_to_disk()``, ``verify(dump_dir)``); it reads what the run left, which
does not exist here. At each launch, the top-level functions of the script not running then have
their code replaced in place: called as a statement of its own by a function that launched, after
its launch, one records its arguments (as ``verifiers.py`` records a listed check's) as a call of
``PATH.py:function``, ``PATH`` the script relative to the checkout, and returns None without running
its body; the script goes on (the next check, the end of the test). Called anywhere else, or as part
of an expression whose value the test uses, it runs its own code, as before. Loaded by path by
``harness.py``; standard library only.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable
from types import FrameType, FunctionType
from typing import Any

Recorder = Callable[..., Callable[..., None]]  # verifiers.recording_of
# where a function whose code was replaced keeps its own (own_calls.py's functions() reads it)
ORIGINAL_CODE = "__run_matrix_original_code__"


def install(trace: Any, root: str, recording_of: Recorder) -> None:
    """Record the script's own checks from its next launch on; a script outside the checkout has
    no path a spec could name, and is left as it is."""
    script = os.path.realpath(trace.script)
    base = os.path.realpath(root) + os.sep
    if not script.startswith(base):
        return
    relative = script[len(base) :].replace(os.sep, "/")
    statements = _statements(trace.script)
    patched: set[str] = set()

    def launching(caller: FrameType) -> None:
        if caller.f_code.co_filename != trace.script:
            return  # a launcher of the checkout's (tests/e2e/.../_common.py): not the script's flow
        running = _running_code()
        for name, function in list(caller.f_globals.items()):
            if (
                name not in patched
                and _own(function, name, trace.script)
                and function.__code__ not in running
            ):
                patched.add(name)
                trace.named.append((f"{relative}:{name}", function))  # hooks.rebound: held to the end
                _replace(function, f"{relative}:{name}", trace, statements, recording_of)

    trace.launching = launching


def _own(value: Any, name: str, script: str) -> bool:
    """A plain top-level function of the script (a closure's code cannot be swapped)."""
    return (
        isinstance(value, FunctionType)
        and value.__code__.co_filename == script
        and value.__qualname__ == name
        and not value.__code__.co_freevars
    )


def _running_code() -> set[Any]:
    frame: FrameType | None = sys._getframe(1)
    found = set()
    while frame is not None:
        found.add(frame.f_code)
        frame = frame.f_back
    return found


def _statements(script: str) -> dict[str, list[tuple[int, int]]]:
    """name -> the lines of each statement of the script that is a bare call of it (``check(...)``)."""
    try:
        with open(script, "rb") as file:
            tree = ast.parse(file.read())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):  # a script built to exhaust ast
        return {}
    found: dict[str, list[tuple[int, int]]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
        ):
            found.setdefault(node.value.func.id, []).append((node.lineno, node.end_lineno or node.lineno))
    return found


def _replace(
    function: FunctionType,
    call: str,
    trace: Any,
    statements: dict[str, list[tuple[int, int]]],
    recording_of: Recorder,
) -> None:
    original = FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__)
    original.__kwdefaults__ = function.__kwdefaults__
    original.__dict__.update(function.__dict__)
    original.__annotations__ = function.__annotations__
    original.__qualname__ = function.__qualname__
    name = function.__name__

    def called(caller: FrameType, *args: Any, **kwargs: Any) -> Any:
        line = caller.f_lineno
        checks = (
            trace.train is None
            and any(frame is caller for frame in trace.launchers)
            and any(first <= line <= last for first, last in statements.get(name, ()))
        )
        if not checks:
            return original(*args, **kwargs)
        recording_of(call, original, flow=id(caller))(*args, **kwargs)
        return None

    function.__dict__[ORIGINAL_CODE] = function.__code__  # what runs when it runs its own code
    function.__code__ = _stand_in.__code__
    function.__defaults__ = None
    function.__kwdefaults__ = {"run_matrix_own_check": lambda *a, **k: called(sys._getframe(2), *a, **k)}


def _stand_in(*args: Any, run_matrix_own_check: Callable[..., Any], **kwargs: Any) -> Any:
    """The code of a test's own function once replaced (its defaults name what decides)."""
    return run_matrix_own_check(*args, **kwargs)
