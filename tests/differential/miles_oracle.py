"""The miles main oracle of the differential tests: .oracles/miles (tools/oracles/miles/build.sh) and
the miles main checkout, extracted from ../shared/upstream/ (tests/conftest.py's UPSTREAM)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from tests.conftest import UPSTREAM

ROOT = Path(__file__).parents[2]
PYTHON = ROOT / ".oracles/miles/bin/python"
STAMP = ROOT / ".oracles/miles/.miles-oracle-stamp"
MAIN = "31f1ca96"


def upstream() -> Path:
    return UPSTREAM


def unavailable_reason() -> str | None:
    if not (PYTHON.is_file() and STAMP.is_file()):
        return f"the miles oracle is not built ({PYTHON}: run tools/oracles/miles/build.sh)"
    if not (upstream() / f"miles-{MAIN}.tar.gz").is_file():
        return f"no miles-{MAIN}.tar.gz in {upstream()}"
    return None


def extract(into: Path, commit: str = MAIN) -> Path:
    """The miles checkout at ``commit``, readable by the sandbox's unprivileged user."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(upstream() / f"miles-{commit}.tar.gz") as archive:
        archive.extractall(into, filter="data")
    (root,) = [path for path in into.iterdir() if path.is_dir()]
    for path in [into, root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root
