"""The ``--miles-python PY`` sandbox shows only what PY needs to start (issue 53, item 1): never a
folder named by the path as given, so a link ``~/bin/python3 -> /usr/bin/python3`` does not bring
the home into the sandbox, where the checkout's code would read it and miles' refusal would print it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runner import miles_parser, pipeline
from runner.miles_parser import Unavailable

pytestmark = pytest.mark.allow_subprocess
ROOT = Path(__file__).parents[1]
SPEC = ROOT / "matrices/qwen3-30b-a3b/baseline.yaml"
REAL_PYTHON = Path(os.path.realpath(sys.executable))
SECRET = "ssh-rsa-PRIVATE-0123456789"
# miles/__init__.py of a checkout that reads every file named ``secret`` it can find around PY
PRYING = """
import os, sys
given = os.path.dirname(sys.executable)
found = []
for folder in (given, os.path.dirname(given), os.path.dirname(os.path.dirname(given))):
    try:
        with open(os.path.join(folder, "secret")) as handle:
            found.append(handle.read())
    except OSError as error:
        found.append(type(error).__name__)
raise RuntimeError("read: " + " | ".join(found))
"""


def prying_checkout(tmp_path: Path, init: str = PRYING) -> Path:
    root = tmp_path / "miles"
    (root / "miles/utils").mkdir(parents=True)
    (root / "miles/__init__.py").write_text(textwrap.dedent(init))
    (root / "miles/utils/__init__.py").write_text("")
    (root / "miles/utils/arguments.py").write_text("def parse_args():\n    pass\n")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def readable(*folders: Path) -> None:
    for folder in folders:
        folder.chmod(0o755)


def secrets_beside(home: Path) -> None:
    """``secret`` (0644: the sandbox's unprivileged user could read it if it saw it) at each level."""
    for folder in [home, *[p for p in home.rglob("*") if p.is_dir() and not p.is_symlink()]]:
        (folder / "secret").write_text(SECRET)
        (folder / "secret").chmod(0o644)


def import_failure(python: Path, checkout: Path) -> str:
    with pytest.raises(Unavailable) as error:
        miles_parser.check([pipeline.cell(SPEC)], python, checkout)  # type: ignore[list-item]
    return str(error.value)


def test_a_linked_interpreter_in_a_home_folder_shows_the_sandbox_none_of_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin/python3").symlink_to(REAL_PYTHON)
    secrets_beside(home)
    readable(tmp_path, home, home / "bin")
    message = import_failure(home / "bin/python3", prying_checkout(tmp_path))
    assert SECRET not in message
    assert "RuntimeError: read: FileNotFoundError | FileNotFoundError | FileNotFoundError\n" in message


def test_a_link_to_a_venv_in_a_home_folder_shows_its_packages_and_nothing_else(tmp_path: Path) -> None:
    home = tmp_path / "home"
    subprocess.run([REAL_PYTHON, "-m", "venv", "--without-pip", home / "venv"], check=True)
    (site,) = (home / "venv/lib").glob("python3*/site-packages")
    (site / "marker.py").write_text("VALUE = 'from the venv'\n")
    secrets_beside(home)
    for path in [tmp_path, home, *home.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    init = "import marker, sys\n" + PRYING.replace('"read: "', 'marker.VALUE + " " + sys.prefix + " read: "')
    message = import_failure(home / "venv/bin/python", prying_checkout(tmp_path, init))
    assert SECRET not in message
    shown = f"RuntimeError: from the venv {home / 'venv'} read: FileNotFoundError | FileNotFoundError | FileNotFoundError\n"
    assert shown in message
