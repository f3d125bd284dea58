"""A function of the checkout's that run-matrix calls: what its ``call`` may name, as text (nothing
of it is ever evaluated), and the models of the entries that call one (``Verify``, ``Hook``; a
prepare step of kind ``call`` is ``schemas.prepare.Call``).

Two forms, told apart by the colon a dotted name never holds:

* ``module.function``: a check the miles version offers (``verifiers:`` of its launch conventions),
  imported by its dotted name on the node;
* ``PATH.py:function``: a function a test of the checkout defines itself, ``PATH`` relative to the
  checkout's root in plain words (``tests/e2e/long/test_qwen3_0.6B_verifiers.py:verify``): a file
  name with a dot, which no dotted name can spell, is the reason for a path; loaded from that file
  on the node without running its ``__main__`` block.
"""

import json
import keyword
import math
import re
from typing import ClassVar

from pydantic import Field, JsonValue, field_validator, model_validator

from schemas.values import Model

LISTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
_WORD = (
    r"[A-Za-z0-9_][A-Za-z0-9_.+-]*"  # a folder or file name: no "..", no hidden name, nothing a shell expands
)
OWN = rf"(?:{_WORD}/)*{_WORD}\.py:[A-Za-z_][A-Za-z0-9_]*"
PATTERN = rf"^(?:{LISTED}|{OWN})$"
_FUNCTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(_WORD)


def is_own(call: str) -> bool:
    """Whether ``call`` names a test's own function by its file (``PATH.py:function``)."""
    return ":" in call


def function_of(call: str) -> str:
    """The function's name: after the colon of a test's own, else after the last dot."""
    return call.rpartition(":")[2] if is_own(call) else call.rpartition(".")[2]


def file_of(call: str) -> str:
    """The file of a test's own check, relative to the checkout (``tests/e2e/.../test_x.py``)."""
    return call.rpartition(":")[0]


def wrong(call: str) -> str | None:
    """Why ``call`` names nothing a verify job may call; None when it is one of the two forms."""
    if re.fullmatch(PATTERN, call):
        return None
    if not is_own(call):
        return (
            f"{call!r} is no dotted name (module.function of a check miles offers) and no PATH.py:function"
            " (a function of a test of the checkout)"
        )
    path, _, function = call.rpartition(":")
    parts = path.split("/")
    if call.count(":") > 1:
        why = "holds more than one colon (PATH.py:function has one)"
    elif path.startswith("/"):
        why = "is an absolute path: name the file relative to the checkout's root (tests/e2e/...)"
    elif ".." in parts:
        why = "leaves the checkout (..): name a file inside it, relative to its root"
    elif not path.endswith(".py"):
        why = "names no .py file"
    elif not all(_PART.fullmatch(part) for part in parts):
        why = (
            "holds a name that is empty, hidden or has characters other than letters, digits and _.+-"
            " (nothing a shell would expand)"
        )
    else:
        why = f"names no function after the colon ({function!r} is no Python name)"
    return f"{call!r} {why}"


MAX_CALL_ARGS = 64 * 1024  # bytes of a call's JSON arguments: one argv string (Linux: 128 KiB at most)


class Called(Model):
    """A function of the checkout's that run-matrix calls, given ``args`` by keyword (``verify:``
    after the job, a ``launch.before_submit`` hook before it, a prepare step of kind ``call`` first)."""

    call: str = Field(
        description="what to call: module.function of a check the launch conventions list under verifiers:"
        " (miles.utils.test_utils.comparisons.metrics.compare_metrics, ...), or PATH.py:function, a function"
        " a test of the checkout defines itself (tests/e2e/long/test_qwen3_0.6B_verifiers.py:verify), the"
        " path relative to the checkout's root",
        json_schema_extra={"pattern": PATTERN},
    )
    args: dict[str, JsonValue] = Field(
        default={},
        description="its keyword arguments, as JSON values; on the node each is converted by the function's"
        " annotation (a mapping into the dataclass or pydantic model it names, text into a Path)",
    )

    @field_validator("call")
    @classmethod
    def _callable(cls, call: str) -> str:
        """One of the two forms, as text (schemas/py); nothing of it is evaluated."""
        why = wrong(call)
        if why is not None:
            raise ValueError(why)
        return call

    @field_validator("args")
    @classmethod
    def _finite(cls, args: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return json_arguments(args)


def json_arguments(args: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Keyword arguments that travel as one JSON argv string: finite numbers (JSON has no NaN or
    infinity, which Python's json would pass on, as no other reader would), and few enough bytes."""
    stack: list[tuple[str, JsonValue]] = list(args.items())
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}: {value} is no JSON number: write a finite one")
        if isinstance(value, list):
            stack += [(f"{where}[{i}]", item) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            stack += [(f"{where}.{key}", item) for key, item in value.items()]
    size = len(json.dumps(args, separators=(",", ":")).encode())
    if size > MAX_CALL_ARGS:
        raise ValueError(
            f"{size} bytes as JSON; they travel as one argument of the function's command line, which"
            f" Linux caps at 128 KiB: at most {MAX_CALL_ARGS} (pass a file's path instead)"
        )
    return args


class Verify(Called):
    """A check of the checkout's own, run once the cell's job succeeded (miles' tests call it after
    ``execute_train``): the function ``call`` names, given ``args`` by keyword.

    ``launched_by`` makes a check of the code a test runs after its launches, in the function that
    launched them (miles' router test compares two launches' dumps in the lines of ``execute()`` that
    follow them): the function is called again, with each function it launched by doing nothing."""

    launched_by: list[str] = Field(
        default=[],
        description="top-level functions of the same file by which the function called launched its jobs"
        " (_run_variant): the cells before this check ran those launches, so on the node each does nothing"
        " and returns None, and what follows them in the function, the test's own check, runs",
    )

    @field_validator("launched_by")
    @classmethod
    def _functions(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{name!r} is no Python name: a top-level function of the called file")
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} named twice")
        return names

    @model_validator(mode="after")
    def _of_the_tests_own(self) -> "Verify":
        if self.launched_by and not is_own(self.call):
            raise ValueError(
                "launched_by needs a function a test of the checkout defines (PATH.py:function), not"
                f" {self.call}"
            )
        if function_of(self.call) in self.launched_by:
            raise ValueError(f"{function_of(self.call)} is the function called: it cannot also do nothing")
        return self


class OwnCalled(Called):
    """A call of a function a test of the checkout defines itself (``PATH.py:function``), never one
    of miles' library: what a hook and a prepare step of kind ``call`` name."""

    what: ClassVar[str]  # in an error: what names the function
    call: str = Field(
        description="PATH.py:function, a top-level function a test of the checkout defines, the path relative"
        " to the checkout's root",
        json_schema_extra={"pattern": f"^{OWN}$"},
    )

    @field_validator("call")
    @classmethod
    def _own(cls, call: str) -> str:
        if not is_own(call):
            raise ValueError(
                f"{call!r} is no PATH.py:function: {cls.what} is a function a test of the checkout defines"
            )
        return call


PUBLIC_NAME = r"[A-Za-z][A-Za-z0-9_]*"  # a method or attribute of what a hook returned: no dots, no _private


class Stop(Model):
    """How a hook's handle is stopped once the job has ended: a method of what the hook returned,
    called with ``args`` by keyword (miles' soak test: ``injector.stop_and_join(timeout_seconds=5)``)."""

    call: str = Field(
        description="a public method of what the hook returned (stop_and_join): a plain name, no dots,"
        " not starting with _",
        json_schema_extra={"pattern": f"^{PUBLIC_NAME}$"},
    )
    args: dict[str, JsonValue] = Field(
        default={}, description="its keyword arguments, as JSON values, converted by its annotations"
    )

    @field_validator("call")
    @classmethod
    def _public(cls, call: str) -> str:
        if not re.fullmatch(PUBLIC_NAME, call):
            raise ValueError(
                f"{call!r} is no public method name: a plain name (letters, digits, _), no dots, not"
                " starting with _ (the method of what the hook returned, as stop_and_join)"
            )
        return call

    @field_validator("args")
    @classmethod
    def _finite(cls, args: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return json_arguments(args)


class Hook(OwnCalled):
    """A hook the test defines itself, called with arguments between ``ray start`` and the submission
    (``{call: PATH.py:function, args: {...}}``; one without arguments is written as its call alone)."""

    what = "a hook"
    stop: Stop | None = Field(
        default=None,
        description="called once the job has ended, before the verify jobs: a method of what the hook"
        " returned ({call: stop_and_join, args: {timeout_seconds: 5}}); then the hook reports the attributes"
        " verify args read ($${hook:FUNCTION.ATTRIBUTE}) and its process ends",
    )
