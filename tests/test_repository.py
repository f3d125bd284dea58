"""extends: of a file outside the spec's repository (issue 32): composed, said (G14), never quoted."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import SpecError
from tests.test_model import MINIMAL

SECRET = "s3cret-of-the-host"


@pytest.fixture
def repo(write, tmp_path: Path) -> Path:
    """A repository (its matrices/ with hardware/) and a folder beside it, elsewhere on the host."""
    (tmp_path / "repo/matrices/hardware").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return tmp_path / "repo"


def spec(repo: Path, text: str) -> Path:
    path = repo / "matrices/spec.yaml"
    path.write_text(text)
    return path


def test_a_base_outside_the_repository_composes_and_is_a_warning_naming_it(repo, tmp_path):
    base = tmp_path / "elsewhere/base.yaml"
    base.write_text("args:\n  misc: {colocate: true}\n")
    cell, warnings = pipeline.checked(spec(repo, f"extends: {base}\n" + MINIMAL))
    assert cell.spec.args.flags()["colocate"] is True
    said = [str(p) for p in warnings if p.rule == "G14"]
    assert said == [
        f"repo/matrices/spec.yaml: warning [G14] extends: extends {base}, which lies outside the spec's"
        f" repository ({repo}); its values are used, never quoted in a message\n"
        "  ==> keep the bases a spec extends in its repository (beside its matrices/), or check that file"
    ]


def test_a_base_inside_the_repository_is_no_warning(repo):
    (repo / "matrices/base.yaml").write_text("args:\n  misc: {colocate: true}\n")
    _, warnings = pipeline.checked(spec(repo, "extends: base.yaml\n" + MINIMAL))
    assert [p for p in warnings if p.rule == "G14"] == []


@pytest.mark.parametrize(
    "text",
    [
        f"root:{SECRET}:19000:0:99999:7:::\n",  # /etc/shadow's form: a string, not a mapping
        f"args: [{SECRET}\n",  # not YAML
        f"model: {{type: {SECRET}}}\n",  # a value the spec's checks reject
        f"miles_version: {SECRET}\n",
        f"args:\n  misc: {{colocate: {SECRET}}}\n",
    ],
)
def test_no_error_quotes_a_value_of_a_base_outside_the_repository(repo, tmp_path, text):
    base = tmp_path / "elsewhere/base.yaml"
    base.write_text(text)
    with pytest.raises(SpecError) as caught:
        pipeline.checked(
            spec(
                repo,
                f"extends: {base}\nhardware: h200\ncluster: {{gpus_per_node: 8}}\n"
                "launch: {script: train.py}\n",
            )
        )
    assert SECRET not in str(caught.value)


def test_a_value_of_an_outside_base_used_by_the_spec_is_not_quoted_in_the_spec_s_error(repo, tmp_path):
    base = tmp_path / "elsewhere/base.yaml"
    base.write_text(f"vars: {{token: {SECRET}}}\n")
    with pytest.raises(SpecError) as caught:
        pipeline.checked(
            spec(repo, f"extends: {base}\n" + MINIMAL + "args:\n  misc: {colocate: '${vars.token}'}\n")
        )
    assert SECRET not in str(caught.value)
    assert f"<a value of {base}>" in str(caught.value)


def test_a_value_the_user_also_wrote_is_never_replaced_and_a_replacement_is_never_searched(repo, tmp_path):
    """An outside base whose values are also words of the spec's own text, or of a file's path: what
    the user wrote stays as written, and what replaces a value is not replaced again."""
    folder = tmp_path / "elsewhere/platform-rocm"
    folder.mkdir()
    base = folder / "base.yaml"
    base.write_text(f"vars: {{name: rocm, token: {SECRET}, flag: session-verify-cycles}}\n")
    own = "args:\n  misc: {colocate: '${vars.token}', session-verify-cycles: 3}\n"
    with pytest.raises(SpecError) as caught:
        pipeline.checked(spec(repo, f"extends: {base}\n" + MINIMAL + own))
    said = str(caught.value)
    assert SECRET not in said and f"<a value of {base}>" in said
    assert "<a value of <a value of" not in said and said.count("<a value of") == said.count(f"<a value of {base}>")


def imported_tree(folder: Path, marked: bool) -> Path:
    (folder / "ckpt" / "base").mkdir(parents=True)
    if marked:
        (folder / ".run-matrix-root").write_text('{"files": []}\n')
    (folder / "ckpt" / "base" / "ckpt.yaml").write_text("args:\n  misc: {colocate: true}\n")
    (folder / "ckpt" / "case.yaml").write_text("extends: base/ckpt.yaml\n" + MINIMAL)
    (folder / "other").mkdir()
    (folder / "other" / "case.yaml").write_text("extends: ../ckpt/base/ckpt.yaml\n" + MINIMAL)
    return folder


@pytest.mark.parametrize(("marked", "g14"), [(True, []), (False, ["G14"])])
def test_the_folder_an_import_marked_is_the_repository_of_the_specs_in_it(tmp_path, marked, g14):
    """``import -o DIR`` writes DIR/.run-matrix-root: a spec below DIR may extend DIR's other files
    without G14, wherever DIR lies (outside any matrices/ tree); unmarked, a folder beside the spec's
    own is outside its repository."""
    out = imported_tree(tmp_path / "imported", marked)
    _, warnings = pipeline.checked(out / "ckpt" / "case.yaml")
    assert [p.rule for p in warnings if p.rule == "G14"] == []  # below the spec's own folder
    _, warnings = pipeline.checked(out / "other" / "case.yaml")
    assert [p.rule for p in warnings if p.rule == "G14"] == g14
