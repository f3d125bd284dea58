"""What a function of the test's own that import records as a call returns, in the import sandbox
(``own_calls.py``): it did not run, so its value is a stand-in.

* a prepare step's (``Prepared``) is text that only a launch's flags may hold: a spec hands what
  the call returns to them as ``$${prepared:FUNCTION}`` (miles' FT soak test passes the folder
  ``materialize_cyclic_debug_rollout_data(30)`` makes as ``--load-debug-rollout-data
  DIR/{rollout_id}.pt``), and run fills it with what the call returned, text or a path, and fails
  the step on anything else (None, an empty text). So it is a stand-in path here (``str()``, an
  f-string, ``os.fspath``, ``+`` give it) and it is true; anything else the test does with it (a
  method, a comparison, a length, reading the path) is refused at its line, and so is any of these
  of the text ``str()`` gives (``PreparedText``), and ``recorded_calls.py`` checks that its text
  reaches only launches' flags, whole;
* a beside hook's handle (``Returned``) gives, for each attribute the test reads, a digit stand-in
  (``Read``) that only run-matrix's own code may compute with (the test's comparing, branching or
  computing with it is refused at its line: the digits would decide it silently), and that must
  reach only a ``verify:`` argument; calling one is the hook's stop, once, after the launch.

Loaded by path by ``harness.py``; standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

# what an attribute of what a beside hook returned reads as: digits, long and odd enough to occur
# nowhere else; recorded_calls.py checks that each reaches only a verify: argument
HOOK_STAND_IN = "8{:03d}4172635089"
Held = Callable[[Any, str, Any], tuple[Any, str | None]]


# what a prepare call's result reads as: a path no node has, long and odd enough to occur nowhere
# else; its number tells the calls apart (recorded_calls.py turns it into ${prepared:FUNCTION})
PREPARED_STAND_IN = "/run-matrix-prepared-{}-5089417263"
PREPARED_FORM = "a spec hands what a prepare step of kind call returns only to a launch's flags, as text"
# what miles' create_run_id() returns: a name no other text holds; run_ids.py turns it into ${run-id}
RUN_ID_STAND_IN = "run-matrix-run-id-6180339887"


class Prepared:
    """What a function recorded as a prepare step returns here: a stand-in path, as text, that a
    launch's flags may hold (``$${prepared:FUNCTION}``); true, as what run accepts is never empty.
    Any other use of it is refused: what the function would have returned is not known here."""

    def __init__(self, trace: Any, function: str, text: str) -> None:
        object.__setattr__(self, "_run_matrix", (trace, function, text))

    def _text(self, *args: Any) -> str:
        trace, function, text = object.__getattribute__(self, "_run_matrix")
        if args and args[0] != "":  # a format spec: f"{x:>40}" pads, truncates or converts it
            raise trace.refuse(f"formats what {function}() returns with {args[0]!r}: {PREPARED_FORM}, whole")
        return PreparedText(trace, function, text)

    def _true(self) -> bool:
        return True

    def _added(self, other: Any) -> Any:
        text = object.__getattribute__(self, "_run_matrix")[2]
        return text + other if isinstance(other, str) else NotImplemented

    def _radded(self, other: Any) -> Any:
        text = object.__getattribute__(self, "_run_matrix")[2]
        return other + text if isinstance(other, str) else NotImplemented

    def _used(self, *args: Any, **kwargs: Any) -> Any:
        trace, function, _ = object.__getattribute__(self, "_run_matrix")
        raise trace.refuse(
            f"uses what {function}() returns, which import does not know: recorded as a prepare step of kind"
            f" call, it did not run here, and {PREPARED_FORM} ($${{prepared:{function}}})"
        )

    __str__ = __fspath__ = __format__ = _text
    __bool__ = _true
    __add__, __radd__ = _added, _radded
    __repr__ = __iter__ = __len__ = __contains__ = _used
    __getattr__ = __setattr__ = __getitem__ = __call__ = __eq__ = __ne__ = __hash__ = _used
    __lt__ = __le__ = __gt__ = __ge__ = __mod__ = __rmod__ = __mul__ = __rmul__ = _used
    __truediv__ = __rtruediv__ = __int__ = __float__ = __index__ = __bytes__ = _used


class PreparedText(str):
    """What ``str()``, an f-string, ``format`` or ``os.fspath`` give of a ``Prepared``: its stand-in
    path, as text the test may pass on, print, or join to other text (``+``, an f-string, ``%``,
    ``"".join``), whose text ``recorded_calls.py`` then follows. What the test's own code does with it
    besides (a method, a comparison, a length, a hash, an item, ``repr``) is refused at its line: it
    would decide on, or make, a text that what the call returns on the node would not give. The
    standard library's, miles' and run-matrix's own code use it as the text it is."""

    _run_matrix: tuple[Any, str]  # the trace, the function

    def __new__(cls, trace: Any, function: str, text: str) -> PreparedText:
        made = super().__new__(cls, text)
        made._run_matrix = (trace, function)
        return made

    def __str__(self) -> str:
        return self  # str(str(x)) is what str(x) is

    def __format__(self, spec: str) -> str:
        if spec:
            _refuse_text_use(self, f"formats it with {spec!r}")
        return self

    def __bool__(self) -> bool:
        return True  # as Prepared is: run fails the step on an empty result


def _text_use(name: str) -> Callable[..., Any]:
    """``str``'s ``name`` for code that is not the test's own; a refusal at the script's line for the
    test's."""
    plain = getattr(str, name)

    def used(self: PreparedText, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_code.co_filename
        if self._run_matrix[0].is_test_code(caller):
            _refuse_text_use(self, _TEXT_USES.get(name) or f"calls .{name}() on it")
        return plain(self, *args, **kwargs)

    used.__name__ = name
    return used


def _refuse_text_use(text: PreparedText, how: str) -> None:
    trace, function = text._run_matrix
    raise trace.refuse(
        f"makes text of what {function}() returns and {how} in code of its own, which import cannot"
        f" follow: it did not run here, and {PREPARED_FORM}, whole ($${{prepared:{function}}})"
    )


# what the test's own code may not do with a PreparedText, and how its refusal says it
_TEXT_USES = {
    **dict.fromkeys(("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"), "compares it"),
    "__hash__": "hashes it (a key of a mapping, a member of a set)",
    "__len__": "takes its length",
    "__contains__": "looks for text in it",
    **dict.fromkeys(("__getitem__", "__iter__"), "takes characters of it"),
    # not __rmod__: "%s" % x is str's own __mod__, which would call a subclass's __rmod__ first
    **dict.fromkeys(("__mul__", "__rmul__", "__mod__"), "computes with it"),
    "__repr__": "takes its repr()",
    **dict.fromkeys((name for name in dir(str) if not name.startswith("_")), None),
}
for _name in _TEXT_USES:
    setattr(PreparedText, _name, _text_use(_name))


class Returned:
    """What a beside hook returned, standing in: each attribute the test reads is a digit stand-in
    (``Read``); calling one is the hook's stop, once, after the launch."""

    def __init__(self, trace: Any, hook: str, held: Held, handle: int) -> None:
        self._run_matrix = (trace, hook, held, handle)

    def __getattr__(self, attribute: str) -> Read:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        trace, hook, held, handle = self._run_matrix
        return Read(trace, hook, attribute, held, handle)


# what a spec's ``$${hook:...}`` cannot do with a hook's state and the test's own code can: compare it,
# branch on it, hash it, compute with it, convert it. The stand-in's digits would decide each silently
# (``assert n > 3`` passes, an ``if`` takes its branch) and the spec would lose it, so each is refused
_ARITHMETIC = "add sub mul truediv floordiv mod divmod pow lshift rshift and or xor"
_USES = {
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge"), "compares it"),
    "bool": "takes its truth",
    "hash": "hashes it (a key of a mapping, a member of a set)",
    **dict.fromkeys(f"{side}{name}" for name in _ARITHMETIC.split() for side in ("", "r")),
    **dict.fromkeys(("neg", "pos", "abs", "invert")),
    **dict.fromkeys(("int", "float", "index", "round", "trunc", "floor", "ceil"), "converts it"),
}
_HARNESS = os.path.dirname(os.path.abspath(__file__))  # run-matrix's own files in the sandbox


def _refusing(operation: str, why: str | None) -> Callable[..., Any]:
    """``int``'s ``__OPERATION__`` for run-matrix's own code (which writes the stand-in as JSON and
    compares what the check gets back); a refusal at the script's line for the test's."""
    plain = getattr(int, f"__{operation}__")

    def used(self: Read, *args: Any) -> Any:
        caller = sys._getframe(1).f_code.co_filename
        if os.path.dirname(os.path.abspath(caller)) == _HARNESS:
            return plain(self, *args)
        what = f"{self.event['function']}().{self.event['attribute']}"
        how = why or "computes with it"
        raise self.trace.refuse(f"reads {what} and {how} in code of its own: {ONLY_VERIFY}")

    used.__name__ = f"__{operation}__"
    return used


ONLY_VERIFY = (
    "a spec reads a hook's state only as a whole argument of a check after the job (verify: ..."
    " $${hook:FUNCTION.ATTRIBUTE})"
)


class Read(int):
    """An attribute of what a beside hook returned: a stand-in integer (recorded as a read) that only
    run-matrix's own code may compute with (``_USES``), or, when called, a method (recorded as the
    hook's stop instead)."""

    event: dict[str, Any]
    trace: Any
    held: Held

    def __new__(cls, trace: Any, hook: str, attribute: str, held: Held, handle: int) -> Read:
        count = sum(e["kind"] == "beside-read" for e in trace.events)
        read = super().__new__(cls, int(HOOK_STAND_IN.format(count + 1)))
        called = next(i for i, e in enumerate(trace.events) if e.get("handle") == handle)
        launched = any(e["kind"] == "train" for e in trace.events[called:])  # the launch it runs beside
        read.event = trace.record(
            "beside-read",
            function=hook,
            attribute=attribute,
            stand_in=int(read),
            launched=launched,
            handle=handle,
        )
        read.trace, read.held = trace, held
        return read

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        trace, event = self.trace, self.event
        trace.events.remove(event)  # a method, not a value
        method = f"{event['function']}().{event['attribute']}()"
        if not event["launched"]:
            raise trace.refuse(f"calls {method} before launching: a hook's stop runs once the job has ended")
        if any(e["kind"] == "beside-stop" and e["handle"] == event["handle"] for e in trace.events):
            raise trace.refuse(f"calls {method} after another method of it: a hook has one stop")
        if args:
            raise trace.refuse(
                f"calls {method} with arguments by position, which a hook's stop passes by name"
            )
        stop: dict[str, Any] = {}
        for name, value in kwargs.items():
            stop[name], why = self.held(_unannotated, name, value)
            if why is not None:
                raise trace.refuse(f"calls {method} with {why}")
        trace.record(
            "beside-stop",
            function=event["function"],
            method=event["attribute"],
            args=stop,
            handle=event["handle"],
        )


for _operation, _why in _USES.items():
    setattr(Read, f"__{_operation}__", _refusing(_operation, _why))


def _unannotated() -> None:
    """What ``held`` reads a stop's arguments against: a method of a value import never saw, whose
    annotations it cannot know, so each argument is kept as the JSON value it is."""
