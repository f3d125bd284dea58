"""workers: single imports run side by side, each in a warm worker process of run-matrix's own.

``python -m runner.importer.workers`` reads one import request at a time on its stdin and answers
on its stdout (each a pickle, length-prefixed): what it wrote, or why it was refused. A worker keeps
what it learnt (conventions, presets, flag catalogs, CI workflows) from one import to the next. It
ends when its stdin does — when run-matrix closes it, or ends in any way — so no worker outlives the
run; one that does not end within ``END_WAIT_S`` after is killed (run-matrix's own child, by its
handle). A worker that dies on an import refuses that import with what it printed, and is started
again for the next. Only run-matrix's own processes read these pickles.
"""

from __future__ import annotations

import itertools
import pickle
import queue
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from runner.errors import Location, Problem

END_WAIT_S = 10.0
_HEADER = struct.Struct("!Q")
Ranked = tuple[int, int, "tuple[Any, Future[Any]] | None"]  # rank, order, the job (None: stop)


class Workers:
    """``jobs`` worker processes; ``submit`` an import, get a future of its answer."""

    def __init__(self, jobs: int, held: Sequence[Path] = ()) -> None:
        # (rank, order, job): an overlay (a request with a base) before a case alone, so that a folder
        # whose cases are imported alone finishes before others start theirs, and tells its tests early
        self.queue: queue.PriorityQueue[Ranked] = queue.PriorityQueue()
        self.order = itertools.count()
        self.stopping = False  # interrupted: what is left is answered without a worker
        self.held = tuple(held)  # paths whose stamp each worker takes once (recordings.held)
        self.threads = [threading.Thread(target=self._feed, daemon=True) for _ in range(jobs)]
        for thread in self.threads:
            thread.start()

    def submit(self, request: Any) -> Future[Any]:
        future: Future[Any] = Future()
        rank = 0 if getattr(request, "base", None) is not None else 1
        self.queue.put((rank, next(self.order), (request, future)))
        return future

    def __enter__(self) -> Workers:
        return self

    def stop(self) -> None:
        self.stopping = True

    def __exit__(self, *exc: object) -> None:
        for _ in self.threads:
            self.queue.put((2, next(self.order), None))
        for thread in self.threads:
            thread.join()

    def _feed(self) -> None:
        worker: _Worker | None = None
        try:
            while (job := self.queue.get()[2]) is not None:
                request, future = job
                if self.stopping:
                    future.set_result([_died(request, "run-matrix was interrupted")])
                    continue
                worker = worker or _Worker(self.held)
                answer = worker.ask(request)
                if answer is None:
                    answer = [_died(request, worker.ended())]
                    worker = None
                future.set_result(answer)
        finally:
            if worker is not None:
                worker.ended()


class _Worker:
    def __init__(self, held: Sequence[Path]) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (it lives as long as the worker; closed in ended())
        argv = [sys.executable, "-m", "runner.importer.workers", *map(str, held)]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)

    def ask(self, request: Any) -> Any | None:
        """The worker's answer; None when it ended without one."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            _send(self.process.stdin, request)
            return _received(self.process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            return None

    def ended(self) -> str:
        """End the worker (it ends at the end of its stdin); the last of what it printed."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
            self.process.wait(END_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.log.seek(0)
        printed = self.log.read().decode("utf-8", "replace").strip().splitlines()
        self.log.close()
        return printed[-1] if printed else f"exit status {self.process.returncode}"


def _died(request: Any, last: str) -> Problem:
    at = (Location(request.script),) if hasattr(request, "script") else ()
    return Problem("import", f"its import process ended without an answer ({last})", locations=at)


def _send(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _received(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


def _serve(held: Sequence[str]) -> None:
    """The worker: each request in, its answer out, until stdin ends. What the import prints goes
    to stderr, never into the answers. ``held``: paths whose stamp it takes once (recordings.held)."""
    from runner.importer import recordings
    from runner.importer.batch import answer

    answers, sys.stdout = sys.stdout.buffer, sys.stderr
    with recordings.held(Path(path) for path in held):
        while True:
            try:
                request = _received(sys.stdin.buffer)
            except EOFError:
                return
            _send(answers, answer(request))


if __name__ == "__main__":
    _serve(sys.argv[1:])
