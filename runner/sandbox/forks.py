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
    def focus(self, script: Path, captures: str) -> None: ...


def each(
    recorder_for_any: Callable[[], Recorder], seconds: float, scripts: list[Path]
) -> Iterator[tuple[Any, Path, IO[str], None]]:
    """Each of ``scripts`` as ``harness.main`` runs one alone, from one load of miles' helpers: this
    process loads them, then forks once per script, and each fork (only a fork: this process yields
    nothing) runs its script as ``main`` runs one after its load, writing ``N.json`` (``N.out``: what
    it printed), then ends. ``loaded.out`` is what the load printed, ``loaded.json`` every top-level
    module it looked up (alone, the script's folder is on the path while the helpers load:
    together.py records a script alone when its folder holds one) and whether the load failed. A
    fork that runs past ``seconds`` is killed and leaves no whole ``N.json``: together.py leaves that
    script to a recording alone."""
    out = Path(os.environ["RUN_MATRIX_OUT"])
    # every file opened before any guard is in place (then writes are the guards')
    files = [(out / f"{n}.json").open("w", encoding="utf-8") for n in range(len(scripts))]
    printed = [os.open(out / f"{n}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC) for n in range(len(scripts))]
    loaded = (out / "loaded.json").open("w", encoding="utf-8")
    _printing_to(os.open(out / "loaded.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
    captures = [tempfile.mkdtemp(prefix="run-matrix-writes-") for _ in scripts]
    recorder = recorder_for_any()
    sys.argv = [""]
    looked = _LookedUp()
    sys.meta_path.insert(0, looked)
    failure = recorder.load_helpers()
    sys.meta_path.remove(looked)
    json.dump({"looked_up": sorted(looked.names), "failed": failure is not None}, loaded)
    loaded.close()
    if failure is not None:
        return
    for n, script in enumerate(scripts):
        sys.stdout.flush()
        sys.stderr.flush()
        child = _FORK()
        if child == 0:  # the fork: set up for its script, which main runs
            for later in range(n + 1, len(scripts)):  # the files of the scripts after it are not its own
                files[later].close()
                os.close(printed[later])
            _printing_to(printed[n])
            recorder.focus(script, captures[n])
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


class _LookedUp(importlib.abc.MetaPathFinder):
    """First on the path while miles' helpers load: notes each top-level module looked up, finds none."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        self.names.add(name.partition(".")[0])
        return None
