"""A miles checkout's words reach the terminal escaped: miles main (the oracle's checkout and
interpreter, .oracles/miles) with a ``miles/__init__.py`` that raises escape codes, through
``validate --miles-python``. Without the oracle this skips; RUN_MATRIX_ORACLES=required fails it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.differential import miles_oracle
from tests.differential.test_against_miles import spec

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]
HOSTILE = "\x1b[31mRED\x1b]0;TITLE\x07"


def test_a_checkout_whose_package_raises_escape_codes_never_drives_the_terminal(
    main_root: Path, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "miles-hostile"
    shutil.copytree(main_root, tree, symlinks=True)
    (tree / "miles/__init__.py").write_text(f"raise RuntimeError({HOSTILE!r})\n")
    path = spec(tmp_path, "hostile", "rollout:\n  rollout-top-p: 0.9")
    tmp_path.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    # the venv by its real path: a worktree's .oracles is a link, which the sandbox does not follow
    python = miles_oracle.PYTHON.parents[1].resolve() / "bin/python"
    result = cli("validate", str(path), "--miles-root", str(tree), "--miles-python", str(python))
    assert (result.code, result.out) == (3, "")
    assert result.err == (
        f"run-matrix: --miles-python {python} cannot import the checkout's parser: RuntimeError:"
        " \\x1b[31mRED\\x1b]0;TITLE\\x07\n"
        "  ==> give an interpreter whose packages hold miles' dependencies (tools/oracles/miles/build.sh"
        " builds one for miles main)\n"
    )
