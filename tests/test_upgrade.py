"""run-matrix upgrade on a copy of the shipped matrices: moving PR-era specs to miles main."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner import pipeline
from tests.conftest import DATA

MATRICES = pipeline.locate.BUNDLED_MATRICES
MAIN = "31f1ca96"
UPSTREAM = Path("/work/miles-main")  # miles main's tree, without .git
upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="no miles main tree at /work/miles-main")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(MATRICES, tmp_path / "matrices")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "matrices"


def test_upgrade_drops_a_removed_flag_with_a_todo_naming_the_upstream_change(cli, tree):
    result = cli("upgrade", "nv/glm5-colocate", "--to-version", MAIN)
    assert result.code == 0, result.err
    text = (tree / "nv/glm5-colocate-31f1ca96.yaml").read_text()
    assert "extends: glm5-colocate.yaml\nmiles_version: 31f1ca96\n" in text
    assert "  misc:\n    disable-weights-backuper: !delete\n" in text
    assert (
        "  args.misc.disable-weights-backuper: '--disable-weights-backuper is not a flag of miles 31f1ca96: "
        'removed by miles PR #2223 (52ac174d) "Remove --disable-weights-backuper; default eligible colocate '
        "launchers to rematerialize\"'\n"
    ) in text
    assert "Upstream instead: --rematerialize-param-from-master-weight: Colocate CPU memory" in text
    assert "(MODEL_ARGS unchanged); miles'' launch conventions are miles 31f1ca96''s (changed: " in text
    assert (
        result.out.splitlines()[0]
        == "wrote matrices/nv/glm5-colocate-31f1ca96.yaml: miles dc8b499b -> 31f1ca96"
    )
    assert result.out.endswith("validated: 0 errors, 1 warnings\n")


def test_upgrade_of_the_rocm_spec_validates_with_nothing_to_decide(cli, tree):
    result = cli("upgrade", "rocm/glm5-async", "--to-version", MAIN)
    assert result.code == 0, result.err
    assert "todo:" not in (tree / "rocm/glm5-async-31f1ca96.yaml").read_text()
    assert result.out.endswith("validated: 0 errors, 0 warnings\n")


def test_a_held_out_spec_loses_no_flag_whose_meaning_changed_silently(cli, tree):
    (tree / "nv/held-out.yaml").write_text(
        "extends: glm5-colocate.yaml\n"
        "args:\n  misc:\n    tito-allowed-append-roles: [tool]\n    miles-router-middleware-paths: my.mod\n"
    )
    result = cli("upgrade", "nv/held-out", "--to-version", MAIN, "-o", "matrices/nv/held-out-main.yaml")
    assert result.code == 0, result.err
    text = (tree / "nv/held-out-main.yaml").read_text()
    assert (
        "  args.misc.tito-allowed-append-roles: '--tito-allowed-append-roles is not a flag of miles 31f1ca96; "
        "the spec set it to its default at dc8b499b ([''tool'']): dropping it changes nothing'\n"
    ) in text
    assert (
        "  args.misc.miles-router-middleware-paths: '--miles-router-middleware-paths (set to ''my.mod'') is not a "
        "flag of miles 31f1ca96, and no shipped fact (miles/upgrades.yaml) says what became of it (at dc8b499b: "
    ) in text
    assert (
        "  args.misc.disable-weights-backuper: '--disable-weights-backuper (set to True) was removed by"
        in text
    )


@upstream
def test_upgrade_from_a_checkout_without_git_names_it_by_its_flags(cli, tree):
    result = cli("upgrade", "nv/glm5-colocate", "--miles-root", str(UPSTREAM))
    assert result.code == 0, result.err
    assert (tree / "nv/glm5-colocate-31f1ca96.yaml").is_file()


def test_upgrade_refuses_bad_input(cli, tree, tmp_path):
    same = cli("upgrade", "nv/glm5-main", "--to-version", MAIN)
    assert (same.code, same.out) == (2, "")
    assert same.err == (
        "run-matrix: matrices/nv/glm5-main.yaml is already for miles 31f1ca96 (miles 31f1ca96): "
        "nothing to upgrade\n"
    )
    unknown = cli("upgrade", "nv/glm5-colocate", "--to-version", "deadbeef")
    assert unknown.err == (
        "run-matrix: --to-version 'deadbeef' names no single shipped miles version (shipped: dc8b499b, 31f1ca96)\n"
    )
    notmiles = cli("upgrade", "nv/glm5-colocate", "--miles-root", str(tmp_path))
    assert (
        notmiles.err
        == f"run-matrix: {tmp_path} is not a miles checkout: it has no miles/utils/arguments.py\n"
    )
    assert cli("upgrade", "nv/glm5-colocate", "--to-version", MAIN).code == 0
    again = cli("upgrade", "nv/glm5-colocate", "--to-version", MAIN)
    assert (again.code, again.err) == (
        2,
        "run-matrix: matrices/nv/glm5-colocate-31f1ca96.yaml already exists; --force overwrites (your edits "
        "are lost), -o writes elsewhere\n",
    )
    assert cli("upgrade", "nv/glm5-colocate", "--to-version", MAIN, "--force").code == 0


@upstream
def test_f1_against_a_newer_checkout_points_to_upgrade(cli, tree):
    result = cli("validate", "nv/glm5-colocate", "--miles-root", "/work/miles-main")
    assert result.code == 2
    assert (
        "  ==> this spec is for miles dc8b499b, the checkout is 31f1ca96: run-matrix upgrade nv/glm5-colocate "
        "--miles-root /work/miles-main\n"
    ) in result.out + result.err


def _f1_hint(cli, checkout: Path) -> str:
    result = cli("validate", "nv/glm5-colocate", "--miles-root", str(checkout), "--format", "json")
    problems = json.loads(result.out)["problems"]
    return next(p["hint"] for p in problems if p["key"] == "args.misc.disable-weights-backuper")


def test_f1_names_a_checkout_of_no_shipped_version_by_its_commit_else_as_unshipped(cli, tree, tmp_path):
    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "flags" / "miles", checkout)  # flags of no shipped version, no .git
    upgrade = f"run-matrix upgrade nv/glm5-colocate --miles-root {checkout}"
    assert (
        _f1_hint(cli, checkout)
        == f"this spec is for miles dc8b499b, the checkout is an unshipped miles: {upgrade}"
    )
    (checkout / ".git").mkdir()
    (checkout / ".git" / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert _f1_hint(cli, checkout) == f"this spec is for miles dc8b499b, the checkout is 01234567: {upgrade}"
