"""memos: what run-matrix remembers while it runs. The one module where a memo is declared
(``tests/test_state.py`` holds every other module to it); two kinds.

**A read of a tree** (:func:`memo`). Checking specs resolves the same specs, bases and profiles
again and again (which repository a file is of, which matrices tree, which file a base is), each
time a walk of ``lstat`` calls: a fifth of a cold ``validate``. Inside the block a command opens
around a read of its tree (``pipeline.select``, ``validate.report``, an import's fit and round
trip of one test until its files are written: nothing writes the tree meanwhile) each path is
resolved once, and each question about the tree (:func:`asked`: which folder above a spec holds
``hardware/``; a checkout's expanded presets) is answered once; outside it, and after it, every call
asks afresh, so a command that writes (``import --force`` replacing a link with its spec) and then
reads sees the tree as it is.

**A memo of the process** (:func:`remember`, :class:`Table`), registered in :data:`MEMOS` with its
kind and why it cannot go stale. Only what no later call could answer otherwise is kept:

* ``pure``: a function of its arguments alone (an expression's syntax tree, a query's SQL);
* ``stamped``: a file's reading, keyed by (or checked against) what says the file is unchanged:
  its path, modification time and size, or its text;
* ``shipped``: run-matrix's own data files (``miles/``, the bundled ``matrices/``), which do not
  change while it runs;
* ``host``: a fact of this machine that costs a process to learn (whether it can isolate checkout
  code), asked by every sandbox run of every command.

Whatever depends on more than its key (a checkout's code run in the sandbox, the current folder, a
tree a command may write) is held by an object the command creates and passes down, and lives as
long as the command: ``cells.build.Inputs``, ``knowledge.conventions.Observed``,
``changed.inputs.Seen``. No module here imports another of run-matrix's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from functools import _lru_cache_wrapper

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
Kind = Literal["pure", "stamped", "shipped", "host"]


class Reading:
    """What one read of a tree has learnt: each path's resolution, each question's answer."""

    def __init__(self) -> None:
        self.paths: dict[Path, Path] = {}
        self.answers: dict[tuple[str, Hashable], Any] = {}


_reading: list[Reading] = []  # the open reads, the innermost last (a nested block shares the outer one)


def resolved(path: Path) -> Path:
    """``path.resolve()``; inside :func:`memo`, as it was the first time it was asked."""
    if not _reading:
        return path.resolve()
    absolute = path.absolute()  # a relative path is keyed by the folder it was relative to
    known = _reading[-1].paths
    if absolute not in known:
        known[absolute] = absolute.resolve()
    return known[absolute]


def asked(question: str, key: Hashable, answer: Callable[[], T]) -> T:
    """``answer()``; inside :func:`memo`, as it was the first time ``question`` was asked of ``key``."""
    if not _reading:
        return answer()
    answers = _reading[-1].answers
    if (question, key) not in answers:
        answers[question, key] = answer()
    found: T = answers[question, key]
    return found


@contextmanager
def memo() -> Iterator[Reading]:
    """Resolve each path (and answer each question) once until the block ends."""
    _reading.append(_reading[-1] if _reading else Reading())
    try:
        yield _reading[-1]
    finally:
        _reading.pop()


@dataclass(frozen=True)
class Memo:
    """One memo of the process, as :data:`MEMOS` lists it."""

    name: str  # the module and the function (or table) that keeps it
    kind: Kind
    why: str  # why it cannot go stale
    clear: Callable[[], None]


MEMOS: dict[str, Memo] = {}  # every memo of the process, by name, registered when its module is imported


def remember(
    kind: Kind, why: str, maxsize: int | None = None
) -> Callable[[Callable[..., T]], _lru_cache_wrapper[T]]:
    """A function whose answers are kept for the process (``functools.lru_cache``: the last ``maxsize``
    asked; None: all), registered in :data:`MEMOS`."""

    def kept(function: Callable[..., T]) -> _lru_cache_wrapper[T]:
        wrapper = functools.lru_cache(maxsize=maxsize)(function)
        _register(f"{function.__module__}.{function.__qualname__}", kind, why, wrapper.cache_clear)
        return wrapper

    return kept


class Table(Generic[K, V]):
    """Values a module keeps by key for the process, registered in :data:`MEMOS`: at most ``limit``,
    then all are let go at once (a command that reads a thousand specs starts the table afresh)."""

    def __init__(self, name: str, kind: Kind, why: str, limit: int) -> None:
        self.limit = limit
        self._kept: dict[K, V] = {}
        _register(name, kind, why, self._kept.clear)

    def get(self, key: K) -> V | None:
        return self._kept.get(key)

    def put(self, key: K, value: V) -> V:
        if len(self._kept) >= self.limit and key not in self._kept:
            self._kept.clear()
        self._kept[key] = value
        return value

    def __len__(self) -> int:
        return len(self._kept)


def forget() -> None:
    """Empty every memo of the process (a test that changes what one of them read)."""
    for each in MEMOS.values():
        each.clear()


def _register(name: str, kind: Kind, why: str, clear: Callable[[], None]) -> None:
    MEMOS[name] = Memo(name, kind, why, clear)  # a module imported again replaces its own
