"""A hook that keeps state beside the job, as miles' soak test keeps its fault injector: it starts a
thread counting, returns a handle the runner stops once the job has ended, and a check reads the
count the handle reported (written for run-matrix; no code of miles is copied here)."""

import os
import threading


class Counting:
    def __init__(self, out, interval):
        self.out = out
        self.ticks = 0
        self.unreadable = {"a set": {1, 2}}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._count, args=(interval,), daemon=True)
        self._thread.start()

    def _count(self, interval):
        while not self._stopped.wait(interval):
            self.ticks += 1

    def stop_and_join(self, timeout_seconds: float):
        """Stops counting, then writes the count where the check can compare it."""
        self._stopped.set()
        self._thread.join(timeout_seconds)
        with open(self.out, "w") as out:
            out.write(str(self.ticks))
        print(f"own injector: stopped after {self.ticks} ticks")

    def refuse(self):
        raise RuntimeError("the injector would not stop")

    def die(self):
        os._exit(7)

    def hang(self):
        threading.Event().wait()

    def mumble(self):
        """Stops, leaving its last output without a line's end (a progress bar's habit)."""
        self._stopped.set()
        print("own injector: stopping...", end="")

    def boast(self):
        """Stops, after a thread of its own printed what looks like run-matrix's report line."""
        self._stopped.set()
        line = 'run-matrix: the before_submit hook reported: {"state": {"ticks": 999999}}'
        printer = threading.Thread(target=print, args=(line,), kwargs={"flush": True})
        printer.start()
        printer.join()
        print(line, flush=True)


def spawn_counter(out, interval_seconds=0.02):
    return Counting(out, interval_seconds)


def assert_count(ticks: int, out: str):
    """The count the hook reported is the one its stop wrote, and it counted."""
    with open(out) as written:
        wrote = int(written.read())
    assert ticks == wrote, f"reported {ticks} ticks, the hook wrote {wrote}"
    assert ticks > 0, "the hook never counted"
    print(f"own check: {ticks} ticks, as the hook wrote")
