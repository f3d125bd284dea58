"""Code a test runs beside its job: a thread that counts until stopped (an FT soak test's fault
injector, in small). A checkout module of the tests, as miles' fault_injection.py is."""

import threading


class Handle:
    def __init__(self, seed: int, interval: float) -> None:
        self.count = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(interval,), daemon=True)

    def _loop(self, interval: float) -> None:
        while not self._stopped.wait(interval):
            self.count += 1

    def stop(self, *, timeout_seconds: float) -> None:
        self._stopped.set()
        self._thread.join(timeout=timeout_seconds)


def spawn(*, seed: int, interval: float) -> Handle:
    handle = Handle(seed, interval)
    handle._thread.start()
    return handle
