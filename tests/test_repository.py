"""A spec composes only files inside its root (rule G14): a base or an overlay elsewhere is refused at the
line that names it, before it is opened, unless the user names its folder (--allow-root)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from runner import cli as commands
from runner import pipeline
from runner.errors import SpecError
from runner.spec import locate, repository
from tests.test_model import MINIMAL

SECRET = "s3cret-of-the-host"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (its matrices/ with hardware/) and a folder beside it, elsewhere on the host."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo/matrices/hardware").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return tmp_path / "repo"


def spec(repo: Path, text: str) -> Path:
    path = repo / "matrices/spec.yaml"
    path.write_text(text)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        pipeline.checked(path)
    return str(caught.value)


def test_a_base_outside_the_root_is_refused_before_it_is_opened(repo, tmp_path):
    base = tmp_path / "elsewhere/base.yaml"
    os.mkfifo(base)  # opened, it would block; stat'ed as a file, it would be "not a file"
    said = refusal(spec(repo, f"extends: {base}\n" + MINIMAL))
    assert said == (
        f"repo/matrices/spec.yaml:1: error [G14] extends: {str(base)!r} ({base}) lies outside the spec's"
        f" root {repo / 'matrices'}: a spec composes only files inside its root\n"
        f"  ==> move it inside {repo / 'matrices'}, or name the folder that holds it: --allow-root DIR"
        " (or RUN_MATRIX_ALLOW_ROOTS=DIR)"
    )


def test_the_root_is_the_matrices_folder_not_the_repository_around_it(repo):
    (repo / "base.yaml").write_text("args:\n  misc: {colocate: true}\n")
    assert "[G14]" in refusal(spec(repo, "extends: ../base.yaml\n" + MINIMAL))
    (repo / "matrices/base.yaml").write_text("args:\n  misc: {colocate: true}\n")
    cell, problems = pipeline.checked(spec(repo, "extends: base.yaml\n" + MINIMAL))
    assert cell.spec.args.flags()["colocate"] is True and problems == []


def test_a_link_inside_the_root_to_a_file_outside_is_outside(repo, tmp_path):
    secret = tmp_path / "elsewhere/vars.yaml"
    secret.write_text(f"vars: {{token: {SECRET}}}\n")
    (repo / "matrices/vars.yaml").symlink_to(secret)
    said = refusal(
        spec(repo, "extends: vars.yaml\n" + MINIMAL + "args:\n  misc: {colocate: '${vars.token}'}\n")
    )
    assert "[G14]" in said and SECRET not in said


@pytest.mark.parametrize(
    "text",
    [
        f"root:{SECRET}:19000:0:99999:7:::\n",  # /etc/shadow's form
        f"args: [{SECRET}\n",  # not YAML
        f"model: {{type: {SECRET}}}\n",
        f"args:\n  misc: {{colocate: {SECRET}}}\n",
    ],
)
def test_nothing_of_a_file_outside_the_root_reaches_a_message(repo, tmp_path, text):
    base = tmp_path / "elsewhere/base.yaml"
    base.write_text(text)
    said = refusal(spec(repo, f"extends: {base}\nhardware: h200\ncluster: {{gpus_per_node: 8}}\n"))
    assert "[G14]" in said and SECRET not in said


def test_allow_root_lets_a_spec_compose_from_a_named_folder(repo, tmp_path, cli, monkeypatch):
    base = tmp_path / "elsewhere/base.yaml"
    base.write_text("args:\n  misc: {colocate: true}\n")
    path = spec(repo, f"extends: {base}\n" + MINIMAL)
    assert cli("validate", str(path), "--no-cache").code == 2
    assert cli("validate", str(path), "--no-cache", "--allow-root", str(tmp_path / "elsewhere")).code == 0
    assert repository.ALLOW_ROOTS not in os.environ  # the option holds for its command alone
    monkeypatch.setenv("RUN_MATRIX_ALLOW_ROOTS", os.pathsep.join(["/nowhere", str(tmp_path / "elsewhere")]))
    assert pipeline.checked(path)[0].spec.args.flags()["colocate"] is True


def test_the_cli_and_the_reader_name_the_same_variable():
    assert commands.ALLOW_ROOTS == repository.ALLOW_ROOTS


def test_an_overlay_outside_the_root_is_refused_at_its_adjust_line(repo, tmp_path):
    outside = tmp_path / "elsewhere/overlay.yaml"
    outside.write_text("args:\n  misc: {colocate: true}\n")
    matrix = (
        f"matrix:\n  axes: {{x: [1]}}\n  adjust:\n    one:\n      match: {{x: 1}}\n      overlay: {outside}\n"
    )
    said = refusal(spec(repo, MINIMAL + matrix))
    assert said.startswith(
        f"repo/matrices/spec.yaml:11: error [G14] matrix.adjust.one.overlay: {str(outside)!r}"
    )


def imported_tree(folder: Path, marked: bool) -> Path:
    (folder / "ckpt" / "base").mkdir(parents=True)
    if marked:
        (folder / ".run-matrix-root").write_text('{"files": []}\n')
    (folder / "ckpt" / "base" / "ckpt.yaml").write_text("args:\n  misc: {colocate: true}\n")
    (folder / "ckpt" / "case.yaml").write_text("extends: base/ckpt.yaml\n" + MINIMAL)
    (folder / "other").mkdir()
    (folder / "other" / "case.yaml").write_text("extends: ../ckpt/base/ckpt.yaml\n" + MINIMAL)
    return folder


@pytest.mark.parametrize("marked", [True, False])
def test_the_folder_an_import_marked_is_the_root_of_the_specs_in_it(tmp_path, marked):
    """``import -o DIR`` writes DIR/.run-matrix-root: a spec below DIR may extend DIR's other files,
    wherever DIR lies; unmarked, a folder beside the spec's own is outside its root."""
    out = imported_tree(tmp_path / "imported", marked)
    assert pipeline.checked(out / "ckpt" / "case.yaml")[1] == []  # below the spec's own folder
    if marked:
        assert pipeline.checked(out / "other" / "case.yaml")[1] == []
    else:
        assert "[G14]" in refusal(out / "other" / "case.yaml")


def test_an_overlay_written_outside_its_sources_root_says_how_to_validate_it(cli, tmp_path, monkeypatch):
    shutil.copytree(locate.BUNDLED_MATRICES, tmp_path / "matrices")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "elsewhere" / "moved.yaml"
    out.parent.mkdir()
    result = cli("upgrade", "nv/glm5-colocate", "--to-version", "31f1ca96", "-o", str(out))
    assert result.code == 0, result.out + result.err
    root = (tmp_path / "matrices").resolve()
    assert f"  it extends a spec outside its own root: validate it with --allow-root {root}\n" in result.out
    refused = cli("validate", str(out), "--no-cache")
    assert refused.code == 2 and "error [G14] extends: '../matrices/nv/glm5-colocate.yaml'" in refused.out
    assert cli("validate", str(out), "--no-cache", "--allow-root", str(root)).code == 0
