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

from runner.knowledge import flags
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
    argv = ["import", str(tree), "-o", str(out), "--miles-root", str(checkout)]
    result = cli(*argv, "-j", "2", "--timeout", "15", "--format", "json")
    assert result.code == 4, result.err  # specs written; the link and the hang refused
    # first told: the 4 tests (the link is never read) recorded together, then what they lack
    told = result.err.splitlines()
    assert told[0] == (
        f"run-matrix: importing with the miles checkout {checkout} (--miles-root): commit unknown: not a git"
        f" checkout; flags: the newest shipped catalog ({flags.shipped()[-1].name}): it has no"
        " miles/utils/arguments.py"
    )
    assert told[1:3] == [f"importing 5 tests of {tree}", "recording 4 tests together"]
    # the one recording they look up next is fewer than 2 a sandbox: made alone by its import, no round
    assert not [line for line in told if "(look " in line]
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
    assert again.code == 4, again.err
    assert {p: p.read_text() for p in out.rglob("*.yaml")} == before
    assert "importing 5 tests of" in again.err and "imported test_nv_case.py" in again.err
    assert "never launching" in again.out


def test_a_folder_with_no_test_below_it_is_refused(cli, tmp_path):
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "sub" / "helper.py").write_text("")
    result = cli("import", str(tmp_path / "tree"), "-o", str(tmp_path / "out"), "--without-checkout")
    assert result.code == 2
    assert "holds no test_*.py, in no folder below it either" in result.err
    assert not (tmp_path / "out").exists()


def test_a_checkout_that_changes_while_it_is_imported_keeps_no_recording(checkout, tmp_path):
    from runner.importer import recordings
    from runner.importer.folder import Folder
    from runner.importer.suite import Suite, import_suite

    tree, cache = checkout / "tests" / "e2e" / "tree", tmp_path / "cache"
    shutil.rmtree(tree / "hangs")
    options = Folder(tree, tmp_path / "out", miles_root=checkout, timeout=15, cache=cache)
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


def test_a_reimport_with_force_replaces_exactly_what_the_last_one_wrote(cli, checkout, tmp_path):
    tree, out = checkout / "tests" / "e2e" / "tree", tmp_path / "out"
    shutil.rmtree(tree / "hangs")
    argv = ["import", str(tree), "-o", str(out), "--miles-root", str(checkout), "-j", "1"]
    first = cli(*argv)
    assert first.code == 4, first.err  # the link is refused
    checked = json.loads(cli("validate", str(out), "--format", "json").out)
    assert [p for p in checked["problems"] if p["rule"] == "G14" or "<a value of" in json.dumps(p)] == []
    marker = json.loads((out / ".run-matrix-root").read_text())
    listed = {out / name for name in marker["files"]}
    assert listed == set(out.rglob("*.yaml")) and out / "wide_case.yaml" in listed
    assert (marker["written by"], marker["checkout"]) == ("run-matrix import", str(checkout.resolve()))
    assert marker["tests"] == str(tree.resolve())
    (out / "notes.yaml").write_text("mine: true\n")  # the user's own file in the output folder
    (out / "b" / "mine.txt").write_text("mine\n")
    refused = cli(*argv)
    assert refused.code == 2 and "pass --force to replace" in refused.err  # nothing replaced unasked
    (tree / "test_wide_case.py").unlink()
    (tree / "b" / "test_amd_nv_case.py").unlink()
    again = cli(*argv, "--force", "--format", "json")
    assert again.code == 4, again.err
    removed = set(json.loads(again.out)["removed"])
    assert {str(out / "wide_case.yaml"), str(out / "b" / "amd_nv_case.yaml")} <= removed
    assert not (out / "wide_case.yaml").exists() and not (out / "b" / "amd_nv_case.yaml").exists()
    assert (out / "notes.yaml").read_text() == "mine: true\n" and (out / "b" / "mine.txt").is_file()
    assert (out / "nv_case.yaml").is_file()
    now = {out / name for name in json.loads((out / ".run-matrix-root").read_text())["files"]}
    assert now == set(out.rglob("*.yaml")) - {out / "notes.yaml"}


def test_a_forged_marker_never_removes_what_lies_outside_the_output(cli, checkout, tmp_path):
    tree, out = checkout / "tests" / "e2e" / "tree", tmp_path / "out"
    shutil.rmtree(tree / "hangs")
    keep = tmp_path / "keep.yaml"
    keep.write_text("kept: true\n")
    out.mkdir()
    forged = {"files": [str(keep), "../keep.yaml", "nv_case.yaml/../../keep.yaml", 7, {"x": 1}]}
    (out / ".run-matrix-root").write_text(json.dumps(forged))
    result = cli("import", str(tree), "-o", str(out), "--miles-root", str(checkout), "-j", "1", "--force")
    assert result.code == 4, result.err
    assert keep.read_text() == "kept: true\n"
