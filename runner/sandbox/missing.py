"""Stand-ins for the third-party packages a miles checkout imports and this interpreter lacks.

A miles test, launcher or helper module imports what miles' container has (httpx, typer, torch,
ray, ...); none of it is needed to record what the script would launch. A module that cannot be
found, imported from the checkout's own code or the script's folder, becomes a permissive
stand-in: any attribute, call, subscript or base class works and gives another stand-in (a base
class: a plain class of that name), and a stand-in called with a single function (a decorator)
gives that function back. mbridge's bridge registry is answered: ``register_model`` (of
``mbridge.core`` and ``mbridge.core.bridge``) registers the class it decorates under each model type
in ``_MODEL_REGISTRY``, a real dict that also holds the model types mbridge registers itself at the
commit miles pins (given by import in ``MBRIDGE_VARIABLE``; without them, or given why they are not
known, ``_MODEL_REGISTRY`` stays a stand-in, and its refusal tells why). What a stand-in cannot
answer without the real package — whether it holds a key, its length, its order, a number made of
it — refuses the import, naming the upstream name it lacks. Imports from anywhere else (the standard
library, installed packages probing for optional ones) still get their ``ImportError``. Loaded by
path inside the sandbox, by the import's ``harness.py`` and by
``knowledge/conventions_driver.py``; standard library only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

BUILD_VARIABLE = "RUN_MATRIX_BUILD"  # the platform a run is recorded for: cuda (default) or rocm
# Where a test asks which build it runs on (``torch.version.hip is not None``), the stand-in answers
# as that platform's build would: None for the other's version. The version texts are placeholders
# (no test reads more than whether they are None).
BUILDS: dict[str, dict[str, str | None]] = {
    "cuda": {"torch.version.hip": None, "torch.version.cuda": "12.9"},
    "rocm": {"torch.version.hip": "7.2", "torch.version.cuda": None},
}
ANSWERS: dict[str, str | None] = dict(BUILDS["cuda"])
MBRIDGE_VARIABLE = "RUN_MATRIX_MBRIDGE"  # {"commit", "registered": [type, ...]} or {"unknown": why}
REGISTRY = "mbridge.core.bridge._MODEL_REGISTRY"
REGISTERED: dict[str, Any] = {}  # mbridge's registry: model type -> its bridge class
UNKNOWN: dict[str, str] = {}  # an upstream name -> why its stand-in cannot answer (told in the refusal)
ASKED: list[Callable[[str], None]] = []  # told each question of ANSWERS, to record who asked
REFUSE: list[Callable[[str], BaseException]] = []  # the refusal of what a stand-in cannot answer
# what an upstream name is, for a person, where its dotted name alone does not say
UPSTREAM_APIS = {
    "mbridge.core.bridge._MODEL_REGISTRY": "mbridge's AutoBridge registry",
    "mbridge.core._MODEL_REGISTRY": "mbridge's AutoBridge registry",
}
_BASES: dict[str, type] = {}  # one class per stand-in used as a base class
REAL: dict[str, Any] = {}  # an upstream name -> the working object that stands in for it


def _unanswered(name: str, does: str) -> BaseException:
    """The refusal of a use of the stand-in ``name`` that needs what the real package holds."""
    package = name.partition(".")[0]
    api = UPSTREAM_APIS.get(name.removesuffix("()"))
    named = f"{name}, {api}," if api else name
    why = UNKNOWN.get(name.removesuffix("()")) or (
        f"this interpreter lacks {package}, and the stand-in has its names, not what they hold"
    )
    reason = (
        f"{does} {named} which import's stand-in for {package} cannot answer: {why} (installed beside"
        f" run-matrix, the real {package} answers)"
    )
    return REFUSE[0](reason) if REFUSE else TypeError(reason)


def _base(name: str) -> type:
    """A plain class named ``name`` (``class HuggingfaceAttention(MegatronModule, ABC)`` has a base
    that orders with ``ABC``): built with any arguments, any attribute of it a stand-in."""
    found = _BASES.get(name)
    if found is None:
        module, _, short = name.rpartition(".")

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            pass

        def __init_subclass__(cls: type, /, **kwargs: Any) -> None:
            pass

        def __getattr__(self: Any, attribute: str) -> Any:
            if attribute.startswith("__") and attribute.endswith("__"):
                raise AttributeError(attribute)
            return Anything(f"{name}().{attribute}")

        namespace = {"__init__": __init__, "__getattr__": __getattr__, "__module__": module or name}
        namespace["__init_subclass__"] = classmethod(__init_subclass__)
        found = _BASES[name] = type(short or name, (), namespace)
    return found


def register_model(model_types: str | Sequence[str]) -> Callable[[type], type]:
    """mbridge's decorator: the class, unchanged, registered under each of ``model_types``."""
    types = [model_types] if isinstance(model_types, str) else list(model_types)

    def register(bridge: type) -> type:
        REGISTERED.update(dict.fromkeys(types, bridge))
        return bridge

    return register


def _mbridge(given: str) -> dict[str, Any]:
    """The real objects that stand in for mbridge's registry, from ``MBRIDGE_VARIABLE``'s text."""
    REGISTERED.clear()
    UNKNOWN.clear()
    fact = json.loads(given) if given else {}
    if "unknown" in fact:
        UNKNOWN[REGISTRY] = str(fact["unknown"])
    real: dict[str, Any] = {"mbridge.core.register_model": register_model}
    real["mbridge.core.bridge.register_model"] = register_model
    if "registered" in fact:  # mbridge's own bridges: plain classes, as a stand-in base class is
        REGISTERED.update({str(t): _base(f"{REGISTRY}[{str(t)!r}]") for t in fact["registered"]})
        real[REGISTRY] = REGISTERED
    return real


def _attribute(owner: str, attribute: str) -> Any:
    name = f"{owner}.{attribute}"
    if name in REAL:
        return REAL[name]
    if name not in ANSWERS:
        return Anything(name)
    for asked in ASKED:
        asked(name)
    return ANSWERS[name]


class Anything:
    """Whatever a missing package's name is used as."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return _attribute(self._name, attribute)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Anything):
            return args[0]  # used as a decorator: the function stays what it is
        return Anything(f"{self._name}()")

    def __getitem__(self, key: Any) -> Anything:
        return Anything(f"{self._name}[]")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (_base(self._name),)  # `class Client(httpx.Client)`: a plain class of that name

    def __contains__(self, item: Any) -> bool:
        raise _unanswered(self._name, f"asks whether {_shown(item)} is in")

    def __len__(self) -> int:
        raise _unanswered(self._name, "asks the length of")

    def _compared(self, other: Any) -> bool:
        raise _unanswered(self._name, f"compares {_shown(other)} with")

    __lt__ = __le__ = __gt__ = __ge__ = _compared

    def _computed(self, other: Any) -> Any:
        raise _unanswered(self._name, f"computes with {_shown(other)} and")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _computed
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = _computed

    def _number(self) -> Any:
        raise _unanswered(self._name, "takes the number of")

    __int__ = __float__ = __index__ = _number

    def __or__(self, other: Any) -> Anything:
        return self

    __ror__ = __or__

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<stand-in for {self._name}>"


def _shown(value: Any) -> str:
    """A value as a refusal shows it: short, whatever it is."""
    try:
        text = repr(value)
    except Exception:  # a value's own repr may fail: the refusal stays
        text = f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


class StandInModule(ModuleType):
    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return _attribute(self.__name__, attribute)


class Missing(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: reached only by modules no other finder has."""

    def __init__(
        self,
        own: Sequence[str],
        used: Callable[[str], None],
        asked: Callable[[str], None] = lambda _: None,
        refuse: Callable[[str], BaseException] | None = None,
    ) -> None:
        self.own = tuple(own)  # folders whose imports may be stood in for
        self.used = used
        ANSWERS.clear()
        ANSWERS.update(BUILDS.get(os.environ.pop(BUILD_VARIABLE, "cuda"), BUILDS["cuda"]))
        REAL.clear()
        REAL.update(_mbridge(os.environ.pop(MBRIDGE_VARIABLE, "")))
        ASKED[:] = [asked]
        REFUSE[:] = [refuse] if refuse else []

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not self._from_own_code():
            return None
        self.used(name.partition(".")[0])
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: ModuleType) -> None:
        pass

    def _from_own_code(self) -> bool:
        """Whether an import statement (not a probe such as ``importlib.util.find_spec``) of the
        checkout's or the script's folder got here."""
        frame = sys._getframe(2)
        importing = False
        while frame is not None and frame.f_code.co_filename.startswith(("<frozen", "<built")):
            importing = importing or frame.f_code.co_name == "_find_and_load"
            frame = frame.f_back  # type: ignore[assignment]
        return importing and frame is not None and frame.f_code.co_filename.startswith(self.own)
