"""The ``--miles-python PY`` sandbox shows only what PY needs to start (issue 53, item 1): never a
folder named by the path as given, so a link ``~/bin/python3 -> /usr/bin/python3`` does not bring
the home into the sandbox, where the checkout's code would read it and miles' refusal would print it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runner import miles_parser, pipeline
from runner.miles_parser import Unavailable
from runner.sandbox import interpreter
from tests.differential import miles_oracle

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


def test_links_are_resolved_component_by_component_as_the_kernel_does(tmp_path: Path) -> None:
    (tmp_path / "real/bin").mkdir(parents=True)
    (tmp_path / "real/bin/python3.11").write_text("")
    (tmp_path / "real/bin/python3").symlink_to("python3.11")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/bin").symlink_to("../real/bin")  # a linked folder, then a relative link
    (tmp_path / "loop").symlink_to("loop")
    links, real = interpreter.resolve(tmp_path / "elsewhere/bin/python3")
    assert (links, real) == (
        [(tmp_path / "elsewhere/bin", "../real/bin"), (tmp_path / "real/bin/python3", "python3.11")],
        tmp_path / "real/bin/python3.11",
    )
    links, real = interpreter.resolve(tmp_path / "loop/python3")
    assert (len(links), real) == (interpreter.MAX_LINKS, tmp_path / "loop/python3")
    assert interpreter.installation(tmp_path / "loop/python3").reads == ()  # never the loop's folder


def test_a_venv_is_shown_as_its_config_its_packages_and_its_base_prefix(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([REAL_PYTHON, "-m", "venv", "--without-pip", venv], check=True)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (tmp_path / "src").mkdir()
    (site / "editable.pth").write_text(f"# a comment\nimport sys\n{tmp_path / 'src'}\n../../../../absent\n")
    shown = interpreter.installation(venv / "bin/python")
    base = REAL_PYTHON.parent.parent
    assert set(shown.reads) == {REAL_PYTHON, base, venv / "pyvenv.cfg", site, tmp_path / "src"}
    assert {link.parent for link, _ in shown.links} == {venv / "bin"}  # the venv's links, nothing else
    assert shown.links[-1][1] == str(REAL_PYTHON)


def test_a_prefix_that_is_a_home_folder_is_shown_as_its_python_folders_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"  # python built with --prefix=$HOME: ~/bin/python3, ~/lib/python3.11/os.py
    (home / "bin").mkdir(parents=True)
    (home / "lib/python3.11").mkdir(parents=True)
    (home / "lib/python3.11/os.py").write_text("")
    (home / "lib/libpython3.11.so.1.0").write_text("")
    (home / "bin/python3").write_text("")
    (home / ".ssh").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert interpreter.installation(home / "bin/python3") == interpreter.Installation(
        reads=(home / "bin/python3", home / "lib/libpython3.11.so.1.0", home / "lib/python3.11"), links=()
    )
    monkeypatch.setenv("HOME", str(tmp_path / "someone-else"))
    assert interpreter.installation(home / "bin/python3").reads == (home, home / "bin/python3")


def test_a_binary_without_a_standard_library_above_it_is_bound_alone(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/python3").write_text("")
    (tmp_path / "secret").write_text(SECRET)
    assert interpreter.installation(tmp_path / "bin/python3") == interpreter.Installation(
        reads=(tmp_path / "bin/python3",), links=()
    )


@pytest.mark.parametrize("python", ["run-matrix", "miles oracle"])
def test_every_folder_on_the_interpreters_own_path_is_shown(python: str) -> None:
    """Asked here (a trusted interpreter): each entry of its ``sys.path`` is bound or reached by a link."""
    given = Path(sys.executable) if python == "run-matrix" else miles_oracle.PYTHON
    if not given.is_file():
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but the miles oracle is not built ({given})")
        pytest.skip(f"the miles oracle is not built ({given})")
    asked = subprocess.run(
        [given, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"], capture_output=True, check=True
    )
    paths = [Path(os.path.realpath(p)) for p in json.loads(asked.stdout) if os.path.exists(p)]
    shown = interpreter.installation(given)
    unshown = [p for p in paths if not any(p == r or r in p.parents for r in shown.reads)]
    assert unshown == []
    assert len(paths) >= 3  # the standard library, lib-dynload, site-packages
