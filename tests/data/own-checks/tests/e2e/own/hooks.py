"""Hooks of the test's own, as the runner tests call them between `ray start` and the submission."""

import os
import subprocess
import sys


def start_sidecar(label="sidecar"):
    """Starts a process that outlives the hook (a server, as miles' OPD teacher is) and says where."""
    sidecar = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "own-hook-sidecar"])
    with open(os.environ["OWN_HOOK_OUT"], "w") as out:
        out.write(str(sidecar.pid))
    print(f"own hook: {label} {sidecar.pid} started")


def refuse_to_start():
    raise RuntimeError("the sidecar would not start")


if __name__ == "__main__":
    raise SystemExit("the __main__ block ran")
