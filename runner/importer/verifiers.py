"""The checkout's checks of a run's output, in the import sandbox: recorded for the spec's ``verify:``.

A test calls them after ``execute_train`` on files the launch would have written; here each records
the arguments the test gives it, as JSON, and checks nothing. A check gets its arguments back
converted by its annotations (``pydantic.TypeAdapter(...).validate_json``, as render's verify
program does on the node), so a dataclass, a pydantic model or a ``Path`` may be passed: the
recording is refused unless that conversion gives back exactly what the test passed. Loaded by path
by ``harness.py``, like ``recorder.py``; pydantic, run-matrix's own dependency, is its one import
outside the standard library.
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import importlib.machinery
import inspect
import json
import math
import re
import sys
import typing
from collections.abc import Callable
from pathlib import PurePath
from types import FunctionType, ModuleType
from typing import Any

from runner.importer.trace import TRACE

# how deep a check's argument may nest: a list that holds itself would recurse until Python gives up
JSON_DEPTH = 32
# what a check's argument may be written as in a spec (its message when it is something else)
JSON_VALUES = "JSON values: text, numbers, true/false, null, lists and mappings"


def install(verifiers: list[str]) -> None:
    """The checkout's checks of a run's output, recorded: a test calls them after execute_train, on
    files the launch would have written. A module is patched when it is first imported (never
    imported here for the test), so one the test does not use is never run; one this checkout
    lacks is left alone (the test's own import of it fails as it would)."""
    checks: dict[str, list[str]] = {}
    for call in verifiers:
        module_name, _, name = call.rpartition(".")
        checks.setdefault(module_name, []).append(name)
    for module_name, names in checks.items():
        if module_name in sys.modules:
            _record_in(sys.modules[module_name], names)
    sys.meta_path.insert(0, _Checks(checks))


class _Checks(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: a module that holds checks is found as it would be (by the
    finders after this one), and its checks are recorded once its own code has run."""

    def __init__(self, checks: dict[str, list[str]]) -> None:
        self.checks = checks

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in self.checks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenRecorded(spec.loader, self.checks[name])
                return spec
        return None


class _ThenRecorded(importlib.abc.Loader):
    """A module's own loader, then its checks recorded."""

    def __init__(self, loader: Any, names: list[str]) -> None:
        self.loader = loader
        self.names = names

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _record_in(module, self.names)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... as the loader has them
        return getattr(self.loader, name)


def _record_in(module: ModuleType, names: list[str]) -> None:
    for name in names:
        function = module.__dict__.get(name)
        if not isinstance(function, FunctionType):
            continue
        check = recording_of(f"{module.__name__}.{name}", function)
        try:
            # in place: the module's own code may have handed the function on before it finished
            # (the FT scenarios' ``compare_fn=_compare``), and that reference must record too
            function.__code__ = _recorded.__code__
        except ValueError:  # a closure (a decorator's wrapper): only the module's name can change
            setattr(module, name, check)
            continue
        function.__defaults__ = None
        function.__kwdefaults__ = {"run_matrix_check": check}


def _recorded(*args: Any, run_matrix_check: Callable[..., None], **kwargs: Any) -> None:
    """The code of a check once recorded (its defaults name the recorder)."""
    return run_matrix_check(*args, **kwargs)


def _hints(function: FunctionType) -> dict[str, Any] | str:
    """The function's annotations, resolved as the verify program resolves them; why not, if not."""
    try:
        return typing.get_type_hints(function)
    except Exception as error:  # an annotation naming what the module imports only for type checkers
        return f"{type(error).__name__}: {error}"


def recording_of(call: str, function: FunctionType, **extra: Any) -> Callable[..., None]:
    """A stand-in for ``function`` that records its call as ``call`` (with ``extra`` in the event)."""
    return verifying(call, inspect.signature(function), _hints(function), **extra)


def verifying(
    call: str, signature: inspect.Signature, hints: dict[str, Any] | str, **extra: Any
) -> Callable[..., None]:
    """A check of a run's output (``verifiers:`` of the launch conventions): the arguments the test
    gives it are recorded for the spec's ``verify:``, and nothing is checked (there is no output)."""
    function = call.rpartition(":")[2] if ":" in call else call.rpartition(".")[2]

    def check(*args: Any, **kwargs: Any) -> None:
        # a call the function does not take raises TypeError here, as the real one would
        given = signature.bind(*args, **kwargs).arguments
        held = {}
        for name, value in given.items():
            try:
                held[name] = _json(value)
            except TypeError as error:
                raise TRACE.refuse(
                    f"passes {function}() {name}={error}, which a spec's verify: cannot hold (it gives a"
                    f" check {JSON_VALUES})"
                ) from None
            back = _given_back(hints, name, held[name])
            if isinstance(back, _Unconverted):
                raise TRACE.refuse(
                    f"passes {function}() {name}={_shown(value)}, which a spec's verify: cannot give the"
                    f" check back ({_why(hints, name)}: {back.reason})"
                )
            if not _same(value, back):
                raise TRACE.refuse(
                    f"passes {function}() {name}={_shown(value)}, which the check would get back from a"
                    f" spec's verify: as {_shown(back)} ({_why(hints, name)})"
                )
        TRACE.record("verify", call=call, args=held, **extra)

    check.__name__ = check.__qualname__ = function
    return check


def held(function: FunctionType, name: str, value: Any) -> tuple[Any, str | None]:
    """``value`` as a spec's JSON for ``function``'s parameter ``name``, and why not (a clause naming
    it) when ``function`` would not get ``value`` back from that: a hook's arguments (hooks.py)."""
    hints = _hints(function)
    try:
        json_value = _json(value)
    except TypeError as error:
        return None, f"{name}={error}, which is no JSON value ({JSON_VALUES})"
    back = _given_back(hints, name, json_value)
    if isinstance(back, _Unconverted):
        return None, f"{name}={_shown(value)}, which it cannot get back ({_why(hints, name)}: {back.reason})"
    if not _same(value, back):
        return (
            None,
            f"{name}={_shown(value)}, which it would get back as {_shown(back)} ({_why(hints, name)})",
        )
    return json_value, None


def _given_back(hints: dict[str, Any] | str, name: str, value: Any) -> Any:
    """What the verify program passes the check for ``value``: converted by the parameter's
    annotation (render's VERIFY_PROGRAM does the same), else as it is."""
    if isinstance(hints, str):
        return _Unconverted(hints)
    if name not in hints:
        return value
    from pydantic import TypeAdapter, ValidationError  # only a check with annotations needs it

    try:
        return TypeAdapter(hints[name]).validate_json(json.dumps(value))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(map(str, first["loc"]))
        return _Unconverted(f"{where + ': ' if where else ''}{first['msg']}")
    except Exception as error:  # a type pydantic has no schema for
        return _Unconverted(f"{type(error).__name__}: {str(error).splitlines()[0]}")


@dataclasses.dataclass(frozen=True)
class _Unconverted:
    """Why the verify program would fail to give the check an argument."""

    reason: str


def _why(hints: dict[str, Any] | str, name: str) -> str:
    if isinstance(hints, str):
        return "its annotations cannot be read"
    if name not in hints:
        return f"{name} has no annotation to convert it back by"
    return f"converted by its annotation {_annotation(hints[name])}"


def _annotation(hint: Any) -> str:
    """``list[Event]``: the annotation as written, its names without their modules."""
    return hint.__name__ if isinstance(hint, type) else re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(hint))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _same(given: Any, back: Any) -> bool:
    """Whether the check gets back what the test gave: equal, of the same type (a list and a tuple
    alike, an int and a float alike)."""
    if isinstance(given, (list, tuple)):
        return isinstance(back, (list, tuple)) and len(given) == len(back) and all(map(_same, given, back))
    if isinstance(given, dict):
        return (
            isinstance(back, dict)
            and given.keys() == back.keys()
            and all(_same(value, back[key]) for key, value in given.items())
        )
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        return isinstance(back, (int, float)) and not isinstance(back, bool) and given == back
    return type(back) is type(given) and bool(back == given)


def _json(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data (a tuple as a list, a dataclass or pydantic model as a mapping of its
    fields, a path as its text); TypeError, naming the value, for anything else."""
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeError(f"float({str(value)!r})")  # JSON has no NaN or infinity
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, PurePath):
        return str(value)
    if depth >= JSON_DEPTH:
        raise TypeError(f"a {type(value).__name__} nested more than {JSON_DEPTH} deep (or holding itself)")
    if isinstance(value, (list, tuple)):
        return [_json(item, depth + 1) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, dict):
        raise TypeError("a dict with keys that are not text")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)) and hasattr(type(value), "model_fields"):
        return _json(value.model_dump(mode="json"), depth + 1)  # a pydantic model
    if callable(value):  # by name: its text holds an address, which differs on every run
        raise TypeError(f"{type(value).__name__} {getattr(value, '__qualname__', '?')}")
    raise TypeError(f"{type(value).__name__}({str(value)[:60]!r})")
