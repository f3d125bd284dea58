"""The miles parser worker: runs inside the sandbox, under the interpreter given as --miles-python.

  PY worker.py REQUEST.json

Standard library only (it runs under someone else's Python): for each cell of the request it builds
the cell's scratch files, sets the cell's environment, presents its GPU to torch, sets ``sys.argv``
and calls the checkout's own ``miles.utils.arguments.parse_args()``. One JSON line per cell goes to
``$RUN_MATRIX_OUT/verdicts.jsonl`` as soon as it is known, so a hang or a crash later keeps the
verdicts before it. Exit 3 when miles cannot even be imported (its reason in ``import.txt``).
"""

import contextlib
import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

OUT = os.environ.get("RUN_MATRIX_OUT", ".")
KEEP_ENV = ("PATH", "HOME", "LANG", "PYTHONHASHSEED", "RUN_MATRIX_OUT")


class Timeout(Exception):
    pass


def present_device(device: dict[str, Any]) -> None:
    """torch as the cell's hardware profile shows it (Megatron reads the capability; sglang hip/cuda)."""
    try:
        torch = importlib.import_module("torch")  # PY's, not run-matrix's
    except ModuleNotFoundError:  # a checkout whose parser needs no torch; miles' own import says if it does
        return

    capability = tuple(device["capability"])
    props = type(
        "Props",
        (),
        {
            "name": device["name"],
            "major": capability[0],
            "minor": capability[1],
            "total_memory": device["memory_gb"] << 30,
            "multi_processor_count": 132,
        },
    )()
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: device["count"]
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_capability = lambda *args, **kwargs: capability
    torch.cuda.get_device_properties = lambda *args, **kwargs: props
    torch.cuda.get_device_name = lambda *args, **kwargs: device["name"]
    if device["platform"] == "rocm":
        torch.version.hip = "6.4.0"
        torch.version.cuda = None


def make_files(files: dict[str, str | None]) -> None:
    for path, content in files.items():
        if content is None:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(content)


def one(cell: dict[str, Any], parse_args: Any, seconds: int) -> dict[str, Any]:
    """The verdict of parse_args on one cell: accepted, or miles' own message and its kind."""
    os.environ.clear()
    os.environ.update({name: value for name, value in cell["base_env"].items() if name in KEEP_ENV})
    os.environ.update(cell["env"])
    make_files(cell["files"])
    sys.argv = [cell["script"], *cell["argv"]]
    started = time.perf_counter()
    stderr = io.StringIO()
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stderr(stderr):
            parse_args()
        verdict: dict[str, Any] = {"accepted": True}
    except SystemExit as exc:  # argparse: its message went to stderr
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        verdict = {"accepted": False, "kind": "exit", "message": lines[-1] if lines else f"exit {exc.code}"}
    except Timeout:
        verdict = {"accepted": False, "kind": "hang", "message": f"parse_args() still ran after {seconds} s"}
    except BaseException as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1:]
        verdict = {
            "accepted": False,
            "kind": type(exc).__name__,
            "message": str(exc) or type(exc).__name__,
            "at": f"{os.path.relpath(where[0].filename)}:{where[0].lineno}" if where else "",
        }
    finally:
        signal.alarm(0)
    verdict.update(id=cell["id"], seconds=round(time.perf_counter() - started, 4))
    return verdict


def on_alarm(signum: int, frame: Any) -> None:
    raise Timeout()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    base_env = dict(os.environ)
    sys.path.insert(0, request["miles_root"])
    os.chdir(request["miles_root"])
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        present_device(request["device"])
        with contextlib.redirect_stdout(sys.stderr):
            parse_args = importlib.import_module("miles.utils.arguments").parse_args
    except BaseException as exc:
        with open(os.path.join(OUT, "import.txt"), "w", encoding="utf-8") as handle:
            handle.write(f"{type(exc).__name__}: {exc}")
        sys.exit(3)
    with open(os.path.join(OUT, "verdicts.jsonl"), "w", encoding="utf-8") as results:
        for cell in request["cells"]:
            present_device(cell["device"])
            with contextlib.redirect_stdout(sys.stderr):
                verdict = one({**cell, "base_env": base_env}, parse_args, request["seconds_per_cell"])
            results.write(json.dumps(verdict) + "\n")
            results.flush()


if __name__ == "__main__":
    main()
