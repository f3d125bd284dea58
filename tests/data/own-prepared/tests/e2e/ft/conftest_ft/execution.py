"""What the FT soak test's prepare call returns for a flag, and what no flag takes."""

import os
import tempfile
from pathlib import Path


def materialize_cyclic_debug_rollout_data(count: int = 30) -> str:
    """A fresh folder of ``count`` rollouts (``0.pt`` ...), each a link to one file: its path."""
    folder = Path(tempfile.mkdtemp(prefix="debug-rollout-data-"))
    (folder / "cycle.pt").write_text("one rollout, again and again\n")
    for rollout_id in range(count):
        (folder / f"{rollout_id}.pt").symlink_to("cycle.pt")
    return str(folder)


def as_path(name: str) -> Path:
    folder = Path(tempfile.mkdtemp()) / name
    folder.mkdir()
    return folder


def returns_none():
    print("materialized nothing")


def returns_count() -> int:
    return 30


def returns_bytes() -> bytes:
    return b"/tmp/debug"


def returns_empty() -> str:
    return ""


def returns_lines() -> str:
    return "/tmp/debug\n/tmp/more"


def returns_reference() -> str:
    return "/tmp/${HOME}/debug"


def returns_long() -> str:
    return "/" + "x" * 5000


def refuse() -> str:
    raise FileNotFoundError("no debug rollout data under /root/datasets/ft")


def leaves() -> str:
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit("the __main__ block ran")
