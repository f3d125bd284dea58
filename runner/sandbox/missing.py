"""Stand-ins for the third-party packages a miles checkout imports and this interpreter lacks.

A miles test, launcher or helper module imports what miles' container has (httpx, typer, torch,
ray, ...); none of it is needed to record what the script would launch. A module that cannot be
found, imported from the checkout's own code or the script's folder, becomes a permissive
stand-in: any attribute, call, subscript or base class works and gives another stand-in, and a
stand-in called with a single function (a decorator) gives that function back. Imports from
anywhere else (the standard library, installed packages probing for optional ones) still get
their ``ImportError``. Loaded by path inside the sandbox, by the import's ``harness.py`` and by
``knowledge/conventions_driver.py``; standard library only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
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
ASKED: list[Callable[[str], None]] = []  # told each question of ANSWERS, to record who asked


def _attribute(owner: str, attribute: str) -> Any:
    name = f"{owner}.{attribute}"
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
        return (object,)  # `class Client(httpx.Client)` is a plain class

    def __or__(self, other: Any) -> Anything:
        return self

    __ror__ = __or__

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<stand-in for {self._name}>"


class StandInModule(ModuleType):
    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return _attribute(self.__name__, attribute)


class Missing(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: reached only by modules no other finder has."""

    def __init__(
        self, own: Sequence[str], used: Callable[[str], None], asked: Callable[[str], None] = lambda _: None
    ) -> None:
        self.own = tuple(own)  # folders whose imports may be stood in for
        self.used = used
        ANSWERS.clear()
        ANSWERS.update(BUILDS.get(os.environ.pop(BUILD_VARIABLE, "cuda"), BUILDS["cuda"]))
        ASKED[:] = [asked]

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
