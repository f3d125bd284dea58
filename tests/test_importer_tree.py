"""run-matrix import DIR on a tree: one output folder per test folder, side by side, cached, told.

The checkout is ``fake-miles`` with ``main-layout`` laid over it; the tree is made of its
``tiny_family`` tests, moved into nested folders.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import fake_checkout

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

FAMILY = "tests/e2e/tiny_family"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = fake_checkout(tmp_path, "main-layout")
    tree = root / "tests" / "e2e" / "tree"
    (tree / "b").mkdir(parents=True)
    (tree / "hangs").mkdir()
    (tree / "empty").mkdir()
    for name in ("test_nv_case.py", "test_wide_case.py"):
        shutil.copy(root / FAMILY / name, tree / name)
    shutil.copy(root / FAMILY / "test_amd_nv_case.py", tree / "b" / "test_amd_nv_case.py")  # no sibling here
    (tree / "test_link.py").symlink_to(root / FAMILY / "test_nv_case.py")
    (tree / "hangs" / "test_hangs.py").write_text("while True:\n    pass\n")
    return root


def test_a_tree_imports_folder_by_folder_a_hang_a_link_and_all(cli, checkout, tmp_path):
    tree, out = checkout / "tests" / "e2e" / "tree", tmp_path / "out"
    argv = ["import", str(tree), "-o", str(out), "--miles-root", str(checkout), "--skip-refused"]
    result = cli(*argv, "-j", "2", "--timeout", "15", "--format", "json")
    assert result.code == 0, result.err
    # first told: the 4 tests (the link is never read) recorded together, then what they lack
    assert result.err.splitlines()[:2] == [f"importing 5 tests of {tree}", "recording 4 tests together"]
    found = json.loads(result.out)
    outcomes = {test: (t["outcome"], t["why"]) for test, t in found["tests"].items()}
    assert outcomes["test_nv_case.py"] == ("imported", "")
    assert outcomes["test_wide_case.py"] == ("imported", "")
    assert outcomes["b/test_amd_nv_case.py"] == ("imported", "written whole: no case to overlay")
    assert outcomes["test_link.py"][0] == "refused" and "is a link (to " in outcomes["test_link.py"][1]
    assert outcomes["hangs/test_hangs.py"][0] == "refused"
    assert "did not finish within 15 s" in outcomes["hangs/test_hangs.py"][1]
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml"))
    assert {"base/out.yaml", "nv_case.yaml", "wide_case.yaml", "b/amd_nv_case.yaml"} <= set(written)
    assert not any(p.startswith(("hangs/", "empty/")) for p in written)
    assert cli("validate", str(out)).code == 0
    base = json.loads(cli("validate", str(out / "base" / "out.yaml"), "--format", "json").out)
    # a part of a spec: the rules may ask for what each case says, the schema nothing of what it holds
    assert [p for p in base["problems"] if p["rule"] == "missing-key" and "." in p["key"]] == []
    # an unchanged tree again: every recording from the cache, the same files
    before = {p: p.read_text() for p in out.rglob("*.yaml")}
    again = cli(*argv, "--force", "-j", "1", "--timeout", "15")
    assert again.code == 0, again.err
    assert {p: p.read_text() for p in out.rglob("*.yaml")} == before
    assert "importing 5 tests of" in again.err and "imported test_nv_case.py" in again.err
    assert "never launching" in again.out


def test_a_folder_with_no_test_below_it_is_refused(cli, tmp_path):
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "sub" / "helper.py").write_text("")
    result = cli("import", str(tmp_path / "tree"), "-o", str(tmp_path / "out"))
    assert result.code == 2
    assert "holds no test_*.py, in no folder below it either" in result.err
    assert not (tmp_path / "out").exists()


def test_a_checkout_that_changes_while_it_is_imported_keeps_no_recording(checkout, tmp_path):
    from runner.importer import recordings
    from runner.importer.folder import Folder
    from runner.importer.suite import Suite, import_suite

    tree, cache = checkout / "tests" / "e2e" / "tree", tmp_path / "cache"
    shutil.rmtree(tree / "hangs")
    options = Folder(tree, tmp_path / "out", miles_root=checkout, skip_refused=True, timeout=15, cache=cache)
    edited = []

    def edit_once(_: str) -> None:  # the checkout changes once the import has looked at it
        if not edited:
            (checkout / "tests" / "e2e" / "tree" / "notes.txt").write_text("edited meanwhile\n")
            edited.append(True)

    result = import_suite(Suite(tree, options, jobs=2), phase=edit_once)
    assert result.changed and edited
    assert result.outcomes[tree / "test_nv_case.py"][0] == "imported"  # written, from what it read then
    assert recordings.entries(cache) == set()  # nothing recorded from a changing tree is kept
    # unchanged since: all is recorded and kept again
    unchanged = import_suite(Suite(tree, replace(options, output=tmp_path / "again"), jobs=2))
    assert not unchanged.changed and recordings.entries(cache)
