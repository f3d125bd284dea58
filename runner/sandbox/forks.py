"""forks: many scripts run from one set-up in one sandbox, each in a fork of its own.

The import's harness (``runner/importer/harness.py --each``) sets its recorder up and loads miles'
helpers once, then this forks once per script; each fork runs its script exactly as the harness
runs one alone after that load, writes its trace, and ends. The import's host side
(``runner/importer/together.py``) keeps a fork's trace only where it is what a recording alone
would be.

Loaded by path by the harness before any guard is in place: it keeps the real ``os.fork`` and
``os.kill`` (the guards refuse them to the test). Standard library only: it runs outside run-matrix.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import select
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol

# the real ones, kept before the guards replace them
_DUP2, _FORK, _KILL, _WAITPID, _PIDFD_OPEN = os.dup2, os.fork, os.kill, os.waitpid, os.pidfd_open


class Recorder(Protocol):
    """What the harness's recorder (``harness._Recorder``) offers the forks."""

    def load_helpers(self) -> dict[str, Any] | None: ...
    def focus(self, script: Path, captures: str, environment: dict[str, str]) -> bool: ...


def each(
    recorder_for_any: Callable[[], Recorder], seconds: float, scripts: list[tuple[Path, dict[str, str]]]
) -> Iterator[tuple[Any, Path, IO[str], None]]:
    """Each of ``scripts`` (each with what its environment holds besides this one) as ``harness.main``
    runs one alone, from one load of miles' helpers: this process loads them, then forks once per
    script, and each fork (only a fork: this process yields nothing) runs its script as ``main`` runs
    one after its load, writing ``N.json`` (``N.out``: what it printed), then ends. ``loaded.out`` is
    what the load printed; ``loaded.json`` says whether the load failed, every top-level module it
    looked up (alone, the script's folder is on the path while the helpers load: together.py records a
    script alone when its folder holds one), and every environment variable it read, set or took away,
    and whether it listed them (a script whose environment differs there is recorded alone, likewise).
    A fork that runs past ``seconds`` is killed and leaves no whole ``N.json``, nor does one that its
    recorder cannot ``focus`` on: together.py leaves that script to a recording alone."""
    out = Path(os.environ["RUN_MATRIX_OUT"])
    # every file opened before any guard is in place (then writes are the guards')
    files = [(out / f"{n}.json").open("w", encoding="utf-8") for n in range(len(scripts))]
    printed = [os.open(out / f"{n}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC) for n in range(len(scripts))]
    loaded = (out / "loaded.json").open("w", encoding="utf-8")
    _printing_to(os.open(out / "loaded.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
    captures = [tempfile.mkdtemp(prefix="run-matrix-writes-") for _ in scripts]
    recorder = recorder_for_any()
    if not _loaded(recorder, loaded):
        return
    for n, (script, its_own) in enumerate(scripts):
        sys.stdout.flush()
        sys.stderr.flush()
        child = _FORK()
        if child == 0:  # the fork: set up for its script, which main runs
            for later in range(n + 1, len(scripts)):  # the files of the scripts after it are not its own
                files[later].close()
                os.close(printed[later])
            _printing_to(printed[n])
            if not recorder.focus(script, captures[n], its_own):
                os._exit(0)  # no trace: recorded alone
            sys.argv = [str(script)]
            sys.path.insert(1, str(script.parent))  # after the checkout, as a load alone leaves it
            yield recorder, script, files[n], None
            files[n].close()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        files[n].close()
        os.close(printed[n])
        _ended_within(child, seconds)


def _loaded(recorder: Recorder, seen: IO[str]) -> bool:
    """Whether miles' helpers loaded; what the load looked up and did with the environment, written
    to ``seen`` (``loaded.json``)."""
    sys.argv = [""]
    looked = _LookedUp()
    sys.meta_path.insert(0, looked)
    with _environment_watched() as environment:
        failure = recorder.load_helpers()
    sys.meta_path.remove(looked)
    found = {"looked_up": sorted(looked.names), "failed": failure is not None}
    json.dump({**found, "environment": sorted(environment.names), "listed": environment.listed}, seen)
    seen.close()
    return failure is None


def _printing_to(fd: int) -> None:
    """stdout and stderr to ``fd`` from here on."""
    sys.stdout.flush()
    sys.stderr.flush()
    _DUP2(fd, 1)
    _DUP2(fd, 2)


def _ended_within(child: int, seconds: float) -> None:
    """Wait for the fork ``child``; killed past ``seconds``."""
    ended = _PIDFD_OPEN(child)
    try:
        if not select.select([ended], [], [], seconds)[0]:
            _KILL(child, signal.SIGKILL)
    finally:
        os.close(ended)
        _WAITPID(child, 0)


class _Environment:
    """What was done with the environment: the names read, set or taken away; whether it was listed."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.listed = False


@contextlib.contextmanager
def _environment_watched() -> Iterator[_Environment]:
    """Within it, ``os.environ``, ``os.environb``, ``os.putenv`` and ``os.unsetenv`` note what is done
    with each variable (in Python: compiled code's own reads are not seen)."""
    seen = _Environment()
    mappings = [(mapping, type(mapping)) for mapping in (os.environ, os.environb)]
    real_putenv, real_unsetenv = os.putenv, os.unsetenv

    def noting(name: Any) -> None:
        seen.names.add(os.fsdecode(name) if isinstance(name, (str, bytes)) else str(name))

    def putenv(name: Any, value: Any) -> None:
        noting(name)
        real_putenv(name, value)

    def unsetenv(name: Any) -> None:
        noting(name)
        real_unsetenv(name)

    for mapping, kind in mappings:
        mapping.__class__ = _watching(kind, noting, seen)
    os.putenv, os.unsetenv = putenv, unsetenv
    try:
        yield seen
    finally:
        for mapping, kind in mappings:
            mapping.__class__ = kind
        os.putenv, os.unsetenv = real_putenv, real_unsetenv


def _watching(kind: type, noting: Callable[[Any], None], seen: _Environment) -> type:
    """A subclass of the mapping class ``kind`` (``os._Environ``, or the recorder's) that notes each
    name it is asked for, given or that it takes away, and being listed."""

    class Watching(kind):  # type: ignore[misc]
        def __getitem__(self, key: Any) -> Any:
            noting(key)
            return super().__getitem__(key)

        def __setitem__(self, key: Any, value: Any) -> None:
            noting(key)
            super().__setitem__(key, value)

        def __delitem__(self, key: Any) -> None:
            noting(key)
            super().__delitem__(key)

        def __contains__(self, key: Any) -> bool:
            noting(key)
            return bool(super().__contains__(key))

        def __iter__(self) -> Iterator[Any]:
            seen.listed = True
            return super().__iter__()  # type: ignore[no-any-return]

        def __len__(self) -> int:
            seen.listed = True
            return int(super().__len__())

    return Watching


class _LookedUp(importlib.abc.MetaPathFinder):
    """First on the path while miles' helpers load: notes each top-level module looked up, finds none."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        self.names.add(name.partition(".")[0])
        return None
