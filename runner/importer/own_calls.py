"""Functions of the test's own that import records as calls instead of running them, in the import
sandbox: what the test does in them is no step, no launch and no check a spec holds, but a spec can
call the function itself.

* **prepare**: a function that prepares the node with what no prepare step runs (miles' verifiers
  test: ``uv venv``, ``pip install``, ``git clone``, ``cd X && "$(uv tool dir --bin)/prime" ...``)
  becomes a prepare step of ``kind: call``;
* **beside**: a function that starts a thread still running when the test launches (miles' FT soak
  tests: ``injector = spawn_fault_injector(seed=..., mean_interval_seconds=...)``) becomes a
  ``launch.before_submit`` hook, kept up beside the job. The test's use of what it returned
  after the launch is recorded too: one method call, the hook's ``stop``
  (``injector.stop_and_join(timeout_seconds=5)``), and each attribute read, a digit stand-in that
  must reach only a ``verify:`` argument, where ``recorded_calls.py`` writes
  ``$${hook:FUNCTION.ATTRIBUTE}`` (``num_successful_injections=injector.num_successful_injections``);
* **replay**: a function that launched through functions of its own and then reads what its
  launches wrote (miles' router test: ``execute()`` launches by ``_run_variant()``, then compares the
  dumps) runs as the test runs it, its launches recorded; what it did after its last launch is a
  check, and becomes a ``verify:`` entry calling it again with ``launched_by`` doing nothing.

Import runs the script again for them. The first run notes, for each command, the top-level
function of the test's code that ran it, and for each launch and each read of a launch's output the
functions it ran in (``functions``); a launch beside a thread notes the function the launching code
called that started it (``beside``). ``recorded_calls.py`` picks the functions to record from that,
and ``capture.py`` runs the script again with them (``install``): each is swapped, once its module
has defined it, for a recorder of its name, so a call records the function by its path in the
checkout with its arguments as JSON (as a hook's, ``hooks.py``). A prepare step or a hook runs
nothing of it: what it would have left behind is not there for the rest of the script, which is the
test's own affair (a script that reads it fails with its line), and what it returns is a stand-in
(``returned.py``).

Loaded by path by ``harness.py``; standard library only.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from types import FrameType, FunctionType
from typing import Any

RECORDER = "__run_matrix_own_call__"  # the recorder's name in a swapped function's module
ORIGINAL_CODE = "__run_matrix_original_code__"  # script_checks.py's, where a swapped function keeps its code
ROLES = ("prepare", "beside", "replay")
_SUSPENDS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
Held = Callable[[Any, str, Any], tuple[Any, str | None]]
# frames of code written inside a function's own lines (a comprehension, a lambda): that function's
INLINE = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>"})


def functions(frame: FrameType | None) -> list[list[Any]]:
    """[file, function, frame id] of each frame from ``frame`` outward that runs a top-level function
    of its module (one a spec can name as PATH.py:function, when it is the test's), innermost first;
    none when ``frame`` itself runs no such function (a nested one, a method, a module's own code),
    past a comprehension or lambda of the function's own. The id tells two calls of one function
    apart while both frames live."""
    found: list[list[Any]] = []
    while frame is not None:
        if _top_level(frame):
            found.append([frame.f_code.co_filename, frame.f_code.co_name, id(frame)])
        elif not found and frame.f_code.co_name not in INLINE:
            return []
        frame = frame.f_back
    return found


def beside(started: list[FrameType], launching: FrameType) -> list[str] | None:
    """[file, function] of the call the launching code made that started a thread (``started``: the
    frames at its start, innermost first), when that is a top-level function; None otherwise (the
    launching code started it itself)."""
    outer: set[int] = set()
    frame: FrameType | None = launching
    while frame is not None:
        outer.add(id(frame))  # alive, as the thread's frames are kept: no id names two frames
        frame = frame.f_back
    common = next((i for i, frame in enumerate(started) if id(frame) in outer), 0)
    inner = started[common - 1] if common > 0 else None
    return [inner.f_code.co_filename, inner.f_code.co_name] if inner and _top_level(inner) else None


def _top_level(frame: FrameType) -> bool:
    """``frame`` runs its module's function of its name, whose code may have been replaced by
    ``script_checks.py`` (which runs the function's own code when it is no check): that code is kept
    on the function under ORIGINAL_CODE."""
    function = frame.f_globals.get(frame.f_code.co_name)
    code = getattr(function, "__dict__", {}).get(ORIGINAL_CODE) or getattr(function, "__code__", None)
    return code is frame.f_code


def install(trace: Any, recorded: list[dict[str, Any]], hooks: Any, held: Held, returned: Any) -> None:
    """Commands, launches and reads record the functions they ran in (``trace.functions``); each of
    ``recorded`` (file, function, role, why, launched_by) is recorded from the moment its module
    defines it: never run, or, to replay, run with its reads after its launches its own."""
    trace.functions, trace.beside = functions, beside
    wanted = {(r["file"], r["function"]): r for r in recorded if r["role"] in ROLES}
    if not wanted:
        return
    files = {file for file, _ in wanted}
    swaps: dict[tuple[str, str], _Recorded] = {}  # each swapped function, by its stand-in's code

    def recorder(*args: Any, **kwargs: Any) -> Any:
        code = sys._getframe(1).f_code  # the swapped function's own
        return swaps[(code.co_filename, code.co_name)].made(trace, args, kwargs, hooks, held, returned)

    def swap(frame: FrameType) -> None:
        for (file, name), entry in list(wanted.items()):
            function = frame.f_globals.get(name)
            if file != frame.f_code.co_filename or not isinstance(function, FunctionType):
                continue
            if function.__code__.co_filename != file or function.__code__.co_freevars:
                continue
            original = FunctionType(function.__code__, function.__globals__, name, function.__defaults__)
            original.__kwdefaults__ = function.__kwdefaults__
            original.__annotations__ = function.__annotations__
            why = hooks.unnamed(trace, function)  # before the swap: its module holds it, its code is its own
            call = hooks.path(trace, function) if why is None else ""
            swaps[(_recorded_file(file), name)] = _Recorded(
                original, call, why, entry["role"], entry["why"], tuple(entry["launched_by"])
            )
            frame.f_globals[RECORDER] = recorder
            function.__code__ = _STAND_IN.__code__.replace(co_name=name, co_filename=_recorded_file(file))
            del wanted[(file, name)]

    def lines(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event in ("line", "return"):
            swap(frame)
        return lines

    def calls(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "call" and frame.f_code.co_name == "<module>" and frame.f_code.co_filename in files:
            return lines
        return None

    sys.settrace(calls)


def _recorded_file(file: str) -> str:
    """The file a swapped function's code names: not the test's, so its line is never the script's."""
    return f"<recorded by run-matrix: {file}>"


def _stand_in(*args: Any, **kwargs: Any) -> Any:
    """The code a swapped function runs: its module's recorder, given the call."""
    return globals()["__run_matrix_own_call__"](*args, **kwargs)  # RECORDER, in the function's module


_STAND_IN = _stand_in
assert RECORDER in _STAND_IN.__code__.co_consts

WHAT = {
    "prepare": "prepares the node in",
    "beside": "runs beside its launch",
    "replay": "checks its launches' output in",
}
FORMS = {
    "prepare": "a spec's prepare step of kind call names a top-level function of a test of the checkout"
    " (PATH.py:function) with JSON arguments",
    "beside": "a spec's launch.before_submit names a top-level function of a test of the checkout"
    " (PATH.py:function) with JSON arguments, kept running beside the job",
    "replay": "a spec's verify: calls a top-level function of a test of the checkout (PATH.py:function)"
    " with JSON arguments, its launches doing nothing (launched_by)",
}


@dataclasses.dataclass(frozen=True)
class _Recorded:
    """A function recorded as a call, as it was before the swap: its signature and annotations, its
    PATH.py:function, why a spec cannot name it (None when it can), its role, and why it is recorded."""

    function: FunctionType
    call: str
    why: str | None
    role: str
    reason: str  # what it did in the run before: the command no step runs, the thread it starts
    launched_by: tuple[str, ...] = ()  # a replay's: the functions of its own it launched by

    def made(
        self, trace: Any, args: tuple[Any, ...], kwargs: dict[str, Any], hooks: Any, held: Held, returned: Any
    ) -> Any:
        """One call: a ``prepare-call`` or ``beside-call`` event and its stand-in value (``returned.py``),
        or a refusal at the script's line."""
        name = self.function.__name__
        why = self.why
        if why is None and self.role == "prepare" and any(e["kind"] == "train" for e in trace.events):
            why = "which it calls after launching (a prepare step runs before the launch)"
        if why is None and self.role == "prepare" and self.function.__code__.co_flags & _SUSPENDS:
            why = (
                "which is a generator or coroutine function: calling it runs none of its code, and a launch"
                " takes what a prepare step of kind call returns as text or a path"
            )
        if why is None and self.role == "replay":
            return self._replayed(trace, args, kwargs, hooks, held)
        if why is None and self.role == "beside" and _beside_once_more(trace.events, name):
            why = (
                "which it calls again before the launch both run beside: import tells what the test does"
                " with each (its stop, what it reads) by the function's name alone"
            )
        if why is None:
            found = self._arguments(args, kwargs, hooks, held)
            if not isinstance(found, str):
                # a beside hook's handle: what the test does with what one call returned is that call's
                made = sum(e["kind"] == f"{self.role}-call" for e in trace.events)
                handle = {"handle": made} if self.role == "beside" else {}
                stand_in = {} if handle else {"stand_in": returned.PREPARED_STAND_IN.format(made + 1)}
                trace.record(
                    f"{self.role}-call",
                    function=name,
                    call=self.call,
                    args=found,
                    reason=self.reason,
                    **handle,
                    **stand_in,
                )
                if handle:
                    return returned.Returned(trace, name, held, made)
                trace.stand_ins[stand_in["stand_in"]] = name
                return returned.Prepared(trace, name, stand_in["stand_in"])
            why = found
        raise trace.refuse(f"{WHAT[self.role]} {name}(), {why}: {FORMS[self.role]}")

    def _arguments(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], hooks: Any, held: Held
    ) -> dict[str, Any] | str:
        """The call's arguments as JSON by name (``hooks.arguments``), else why a spec cannot pass them."""
        try:
            bound = inspect.signature(self.function).bind(*args, **kwargs)
        except TypeError as error:  # the test's own call is wrong, as it would be
            raise TypeError(f"{self.function.__name__}() {error}") from None
        bound.apply_defaults()
        found: dict[str, Any] | str = hooks.arguments(self.function.__name__, self.function, bound, held)
        return found

    def _replayed(
        self, trace: Any, args: tuple[Any, ...], kwargs: dict[str, Any], hooks: Any, held: Held
    ) -> Any:
        """The function run as the test runs it, its launches recorded; what it does after its last
        launch, where it reads what its launches wrote, is a check: those events go (the reads' stand-ins
        with them, and a failure they caused), and a ``verify`` event calls the function again with the
        functions it launched by doing nothing. A function that launched nothing, or read nothing after
        its launches, is what it is: its result or its exception stands."""
        name = self.function.__name__
        start = len(trace.events)
        try:
            result, raised = self.function(*args, **kwargs), None
        except Exception as error:  # Refused is a BaseException: a refusal stands
            result, raised = None, error
        launches = [i for i, e in enumerate(trace.events[start:], start) if e["kind"] == "train"]
        after = trace.events[launches[-1] + 1 :] if launches else []
        if not any(e["kind"] == "read" for e in after):
            if raised is not None:
                raise raised
            return result
        found = self._arguments(args, kwargs, hooks, held)
        if isinstance(found, str):
            raise trace.refuse(f"{WHAT[self.role]} {name}(), {found}: {FORMS[self.role]}")
        del trace.events[launches[-1] + 1 :]
        trace.record("verify", call=self.call, args=found, launched_by=list(self.launched_by))
        trace.record("replay", function=name, reason=self.reason, launched_by=list(self.launched_by))
        return None


def _beside_once_more(events: list[dict[str, Any]], name: str) -> bool:
    """Whether ``name`` started a beside hook since the last launch (or before the first)."""
    for event in reversed(events):
        if event["kind"] == "train":
            return False
        if event["kind"] == "beside-call" and event["function"] == name:
            return True
    return False
