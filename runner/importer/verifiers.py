"""The checkout's checks of a run's output, in the import sandbox: recorded for the spec's ``verify:``.

A test calls them after ``execute_train`` on files the launch would have written; here each records
the arguments the test gives it, as JSON, and checks nothing. Loaded by path by ``harness.py``, like
``recorder.py``, and so standard library only.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.importer.trace import TRACE

# how deep a check's argument may nest: a list that holds itself would recurse until Python gives up
JSON_DEPTH = 32


def install(verifiers: list[str]) -> None:
    """The checkout's checks of a run's output, recorded: a test calls them after execute_train, on
    files the launch would have written. One this checkout lacks, or cannot import here, is left
    alone (the test's own import of it fails as it would)."""
    for call in verifiers:
        module_name, _, name = call.rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        function = getattr(module, name, None)
        if callable(function):
            TRACE.own_files.add(str(Path(module.__file__ or "").resolve()))
            setattr(module, name, verifying(call, function))


def verifying(call: str, function: Callable[..., Any]) -> Callable[..., None]:
    """A check of a run's output (``verifiers:`` of the launch conventions): the arguments the test
    gives it are recorded for the spec's ``verify:``, and nothing is checked (there is no output)."""

    def check(*args: Any, **kwargs: Any) -> None:
        # a call the function does not take raises TypeError here, as the real one would
        given = inspect.signature(function).bind(*args, **kwargs).arguments
        held = {}
        for name, value in given.items():
            try:
                held[name] = _json(value)
            except TypeError as error:
                raise TRACE.refuse(
                    f"passes {call.rsplit('.', 1)[1]}() {name}={error}, which a spec's verify: cannot hold"
                    " (it gives a check JSON values: text, numbers, true/false, null, lists and mappings)"
                ) from None
        TRACE.record("verify", call=call, args=held)

    check.__name__ = check.__qualname__ = function.__name__
    return check


def _json(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data (a tuple as a list); TypeError, naming the value, for anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth >= JSON_DEPTH and isinstance(value, (list, tuple, dict)):
        raise TypeError(f"a {type(value).__name__} nested more than {JSON_DEPTH} deep (or holding itself)")
    if isinstance(value, (list, tuple)):
        return [_json(item, depth + 1) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, dict):
        raise TypeError("a dict with keys that are not text")
    if callable(value):  # by name: its text holds an address, which differs on every run
        raise TypeError(f"{type(value).__name__} {getattr(value, '__qualname__', '?')}")
    raise TypeError(f"{type(value).__name__}({str(value)[:60]!r})")
