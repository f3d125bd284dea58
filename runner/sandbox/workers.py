"""workers: warm worker processes of run-matrix's own, each answering one request at a time.

``Workers(argv, jobs)`` starts up to ``jobs`` processes running ``argv`` (a module of run-matrix's
whose ``__main__`` calls :func:`serve`); ``submit`` hands a request to the next free one and returns a
future of its answer. Requests and answers are pickles, length-prefixed, on the worker's stdin and
stdout. A worker ends when its stdin does — when run-matrix closes it, or ends in any way — so no
worker outlives the run; one that does not end within ``END_WAIT_S`` after is killed (run-matrix's
own child, by its handle). A request whose worker dies is answered by ``died(request, the last line
it printed)``, and a worker is started again for the next. Only run-matrix's own processes read
these pickles: the workers run its own code, never a checkout's (that runs in :func:`run`'s child).
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
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import IO, Any

END_WAIT_S = 10.0
_HEADER = struct.Struct("!Q")
Ranked = tuple[int, int, "tuple[Any, Future[Any]] | None"]  # rank, order, the job (None: stop)
_STOP_RANK = sys.maxsize  # after every request


class Workers:
    """``jobs`` worker processes running ``argv``; ``submit`` a request, get a future of its answer.
    ``rank``: a request of a lower rank is taken first (ties in the order submitted); ``died``: the
    answer of a request whose worker ended without one, or that comes after ``stop``."""

    def __init__(
        self,
        argv: Sequence[str],
        jobs: int,
        rank: Callable[[Any], int],
        died: Callable[[Any, str], Any],
    ) -> None:
        self.argv, self.rank, self.died = tuple(argv), rank, died
        self.queue: queue.PriorityQueue[Ranked] = queue.PriorityQueue()
        self.order = itertools.count()
        self.stopping = False  # interrupted: what is left is answered without a worker
        self.threads = [threading.Thread(target=self._feed, daemon=True) for _ in range(jobs)]
        for thread in self.threads:
            thread.start()

    def submit(self, request: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.queue.put((self.rank(request), next(self.order), (request, future)))
        return future

    def __enter__(self) -> Workers:
        return self

    def stop(self) -> None:
        self.stopping = True

    def __exit__(self, *exc: object) -> None:
        for _ in self.threads:
            self.queue.put((_STOP_RANK, next(self.order), None))
        for thread in self.threads:
            thread.join()

    def _feed(self) -> None:
        worker: _Worker | None = None
        try:
            while (job := self.queue.get()[2]) is not None:
                request, future = job
                if self.stopping:
                    future.set_result(self.died(request, "run-matrix was interrupted"))
                    continue
                worker = worker or _Worker(self.argv)
                answer = worker.ask(request)
                if answer is None:
                    answer = self.died(request, worker.ended())
                    worker = None
                future.set_result(answer)
        finally:
            if worker is not None:
                worker.ended()


class _Worker:
    def __init__(self, argv: Sequence[str]) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (it lives as long as the worker; closed in ended())
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


def serve(answer: Callable[[Any], Any]) -> None:
    """A worker's loop: each request in, ``answer(request)`` out, until stdin ends. What the answering
    prints goes to stderr, never into the answers."""
    answers, sys.stdout = sys.stdout.buffer, sys.stderr
    while True:
        try:
            request = _received(sys.stdin.buffer)
        except EOFError:
            return
        _send(answers, answer(request))


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
