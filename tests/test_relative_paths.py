"""A relative ``--miles-root`` (and relative spec, test and output paths) works in every command
that takes one: one test per command family, on miles main with a model only the checkout has."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_importer_checkout_preset import NEW, PRESETS, TEST

pytestmark = pytest.mark.allow_subprocess  # the sandbox expands the checkout's presets

COMMIT = "31f1ca96"


@pytest.fixture(scope="module")
def work(upstream_miles: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``miles/`` (miles main, a git clone, plus one model and a test of it) and
    ``new.yaml``, the spec imported from that test."""
    folder = tmp_path_factory.mktemp("relative")
    folder.chmod(0o755)
    root = folder / "miles"
    shutil.copytree(upstream_miles(COMMIT), root, symlinks=True)
    name, text = PRESETS[COMMIT]
    (root / "scripts" / "models" / name).write_text(text)
    (root / "tests" / "e2e" / "test_new_model.py").write_text(TEST)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "main plus one model"], check=True)
    return folder


@pytest.fixture
def here(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(work)
    monkeypatch.delenv("MILES_ROOT", raising=False)
    return work


@pytest.fixture
def imported(here: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    spec = here / "new.yaml"
    if not spec.exists():
        result = cli(
            "import",
            "miles/tests/e2e/test_new_model.py",
            "-o",
            "new.yaml",
            "--hardware",
            "h200",
            "--miles-root",
            "miles",
        )
        assert result.code == 0, result.err
    return spec


def test_import(imported):
    text = imported.read_text()
    assert f"  type: {NEW}\n" in text
    assert str(imported.parent) not in text


def test_validate_and_render(imported, cli):
    assert cli("validate", "new.yaml", "--miles-root", "miles").code == 0
    rendered = cli("render", "new.yaml", "--miles-root", "miles")
    assert rendered.code == 0, rendered.err
    assert "--hidden-size 512" in rendered.out.replace(" \\\n  ", " ")


def test_list(imported, cli):
    result = cli("list", "new.yaml", "--miles-root", "miles", "--format", "json")
    assert result.code == 0, result.err
    assert '"id": "new"' in result.out


def test_run_dry_run(imported, cli):
    result = cli("run", "new.yaml", "--dry-run", "--no-preflight", "--miles-root", "miles")
    assert result.code == 0, result.err
    assert "miles/train.py" in result.out


def test_presets_sync_check_lists_the_one_model_the_checkout_adds(here, cli):
    result = cli("presets", "sync", "--check", "--miles-root", "miles")
    assert result.code == 1, result.err  # --check fails while the shipped presets lag the checkout
    changed = [line for line in result.out.splitlines() if ": new (" in line or ": changed" in line]
    assert changed == [f"{NEW}: new (not in {ROOT / 'miles' / 'models' / '2026-08-21-31f1ca96'})"]


def test_ci_sync(here, cli):
    result = cli("ci", "sync", "--miles-root", "miles", "-o", "ci-out")
    assert result.code == 0, result.err
    assert [p.suffix for p in (here / "ci-out").iterdir()] == [".yaml"]


def test_upgrade(here, cli):
    result = cli(
        "upgrade",
        str(ROOT / "matrices" / "nv" / "glm5-colocate.yaml"),
        "--miles-root",
        "miles",
        "-o",
        "upgraded.yaml",
        "--force",
    )
    assert result.code == 0, result.err
    assert (here / "upgraded.yaml").is_file()
