"""The CLI starts fast: render, validate, explain and run --dry-run import nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
HEAVY = ("ray", "torch", "sglang", "megatron", "transformers")
PROBE = """
import sys, io, contextlib
from runner.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})
print(code, heavy)
"""


@pytest.mark.allow_subprocess
@pytest.mark.parametrize(
    "argv",
    [
        ["render", "rocm/glm5-async.yaml"],
        ["validate", "matrices/"],
        ["explain", "nv/glm5-colocate.yaml"],
        ["run", "--dry-run", "rocm/glm5-async.yaml"],
    ],
)
def test_no_heavy_imports(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "0 []\n"
