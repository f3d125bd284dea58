"""Presets read from a miles checkout: both forms expanded in the sandbox, cached, and shown."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from runner import memos, sandbox
from runner.knowledge import checkout, presets
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess
CHECKOUT = DATA / "fake-miles"


def snapshot(name: str) -> tuple[str, ...]:
    text = (CHECKOUT / "tests/snapshots/model_args" / f"{name}.txt").read_text()
    return tuple(json.loads(line) for line in text.splitlines())


def test_both_forms_expand_as_miles_expands_them():
    found = presets.expand(CHECKOUT)
    assert sorted(found) == [
        "glm5-744B-A40B_4layer", "tiny-broken", "tiny-dense", "tiny-dense-deep", "tiny-moe", "tiny-moe-2layer",
    ]  # fmt: skip
    assert found["tiny-dense"].tokens == snapshot("tiny-dense")
    assert found["tiny-dense-deep"].tokens == snapshot("tiny-dense-deep")  # loads its sibling
    assert found["tiny-moe-2layer"].tokens == (  # sources its sibling through dirname, then patches it
        "--num-layers", "2", "--num-experts", "8", "--moe-layer-freq", "[0]*1+[1]*1", "--hidden-size", "64",
    )  # fmt: skip
    assert found["tiny-moe-2layer"].source == (CHECKOUT / "scripts/models/tiny-moe-2layer.sh").resolve()
    assert found["tiny-broken"] == presets.Expanded(
        "tiny-broken",
        (CHECKOUT / "scripts/models/tiny-broken.sh").resolve(),
        error="fails with status 3 when bash sources it: tiny-broken: no such base",
    )


def test_expansions_are_cached_by_the_content_of_what_they_read(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    checkout.chmod(0o755)
    tmp_path.chmod(0o755)
    models = checkout / "scripts/models"
    models.mkdir()
    (models / "a.sh").write_text("MODEL_ARGS=(--num-layers 1)\n")
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "1")
    runs: list[object] = []
    real = sandbox.run
    monkeypatch.setattr(sandbox, "run", lambda *a, **k: runs.append(a) or real(*a, **k))
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "1")
    assert runs == []
    (models / "b.sh").write_text("N=2\n")  # a sibling a.sh could source: it changes the key
    (models / "a.sh").write_text('MODEL_ARGS=(--num-layers "$((1 + 1))")\n')
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "2")
    assert len(runs) == 1


def test_a_preset_sees_nothing_of_the_caller(tmp_path, monkeypatch):
    secret = tmp_path / "secret.txt"
    secret.write_text("do-not-read")
    monkeypatch.setenv("MODEL_ARGS_ROTARY_BASE", "from-the-caller")
    checkout = tmp_path / "checkout"
    (checkout / "scripts/models").mkdir(parents=True)
    tmp_path.chmod(0o755)
    (checkout / "scripts/models/spy.sh").write_text(
        f'MODEL_ARGS=(--seen "$(cat {secret} 2>/dev/null || echo nothing)" --env "${{MODEL_ARGS_ROTARY_BASE:-unset}}")\n'
    )
    assert presets.expand(checkout)["spy"].tokens == ("--seen", "nothing", "--env", "unset")


@pytest.mark.parametrize(
    ("head", "files", "commit"),
    [
        ("ref: refs/heads/main\n", {"refs/heads/main": "a" * 40 + "\n"}, "a" * 40),
        ("ref: refs/heads/main\n", {"packed-refs": f"# pack-refs\n{'b' * 40} refs/heads/main\n"}, "b" * 40),
        ("c" * 40 + "\n", {}, "c" * 40),
        ("ref: refs/heads/gone\n", {}, None),
    ],
)
def test_the_commit_is_read_without_running_git(tmp_path, head, files, commit):
    git = tmp_path / ".git"
    git.mkdir()
    (git / "HEAD").write_text(head)
    for name, text in files.items():
        (git / name).parent.mkdir(parents=True, exist_ok=True)
        (git / name).write_text(text)
    assert checkout.head_commit(tmp_path) == commit
    assert checkout.head_commit(tmp_path / "none") is None


def test_presets_list_and_show(cli, in_repo):
    shipped = cli("presets", "list")
    assert shipped.code == 0
    rows = {line.split()[0]: line.split()[1:] for line in shipped.out.splitlines()}
    assert len(rows) == 68  # miles main's 66, and two of the PR era's that main deleted
    assert rows["glm5-744B-A40B_4layer"] == [
        "31f1ca96",
        "scripts/models/glm5-744B-A40B_4layer.py",
        "66",
        "tokens",
    ]
    assert rows["moonlight"] == ["dc8b499b", "scripts/models/moonlight.sh", "78", "tokens"]
    listed = cli("presets", "list", "--miles-root", str(CHECKOUT))
    assert "tiny-broken" in listed.out and "fails with status 3 when bash sources it" in listed.out
    shown = cli("presets", "show", "tiny-dense-deep", "--miles-root", str(CHECKOUT), "--format", "json")
    assert json.loads(shown.out) == {
        "type": "tiny-dense-deep",
        "model_args": list(snapshot("tiny-dense-deep")),
        "source": "scripts/models/tiny-dense-deep.py",
        "miles_commit": None,
    }
    text = cli("presets", "show", "tiny-moe", "--miles-root", str(CHECKOUT))
    assert text.out.splitlines() == [
        "# tiny-moe: scripts/models/tiny-moe.sh (miles commit unknown)",
        "--num-layers 4 --num-experts 8 --moe-layer-freq [0]*1+[1]*3 --hidden-size 64",
    ]


def test_presets_show_refuses_what_it_cannot_show(cli, in_repo, tmp_path):
    unknown = cli("presets", "show", "tiny-dens", "--miles-root", str(CHECKOUT))
    assert unknown.code == 2
    assert unknown.err.endswith(
        "error [unknown-name] model.type: no model preset 'tiny-dens' in "
        f"{CHECKOUT / 'scripts/models'}\n  ==> did you mean 'tiny-dense'?\n"
    )
    broken = cli("presets", "show", "tiny-broken", "--miles-root", str(CHECKOUT))
    assert broken.code == 2
    assert broken.err == (
        "tests/data/fake-miles/scripts/models/tiny-broken.sh: error [model-args] model.type: tiny-broken: "
        "fails with status 3 when bash sources it: tiny-broken: no such base\n"
    )
    missing = cli("presets", "list", "--miles-root", str(tmp_path / "none"))
    assert (missing.code, missing.err) == (
        2,
        f"run-matrix: --miles-root {tmp_path / 'none'}: no such directory\n",
    )


def test_the_shipped_version_is_chosen_explicitly(cli, in_repo):
    at_pr = cli("presets", "show", "kimi-k2", "--miles-version", "dc8b499b", "--format", "json")
    at_main = cli("presets", "show", "kimi-k2", "--format", "json")
    pr, main = json.loads(at_pr.out), json.loads(at_main.out)
    assert (pr["source"], pr["miles_commit"][:8]) == ("scripts/models/kimi-k2.sh", "dc8b499b")
    assert (main["source"], main["miles_commit"][:8]) == ("scripts/models/kimi-k2.py", "31f1ca96")
    assert pr["model_args"] != main["model_args"]  # both kept: they differ
    gone = cli("presets", "show", "moonlight", "--miles-version", "31f1ca96")
    assert gone.code == 2
    assert gone.err == (
        "--miles-version: error [unknown-name] model.type: no model preset named 'moonlight' at miles 31f1ca96;"
        " miles dc8b499b has it\n  ==> miles_version: dc8b499b\n"
    )
    unknown = cli("presets", "show", "kimi-k2", "--miles-version", "abc")
    assert (unknown.code, unknown.err) == (
        2,
        "run-matrix: --miles-version abc names no single shipped version (dc8b499b, 31f1ca96)\n",
    )


def test_sync_writes_a_folder_per_commit_and_check_finds_drift(cli, in_repo, tmp_path, monkeypatch):
    from runner.knowledge import presets as knowledge_presets
    from runner.spec import locate

    monkeypatch.setattr(locate, "PRESETS", tmp_path / "models")
    (tmp_path / "models").mkdir()
    monkeypatch.setattr(knowledge_presets, "identity", lambda checkout, trust=False: ("f" * 40, "2026-11-30"))
    check = cli("presets", "sync", "--miles-root", str(CHECKOUT), "--check")
    assert check.code == 1  # nothing shipped yet, and tiny-broken does not expand
    written = cli("presets", "sync", "--miles-root", str(CHECKOUT), "--format", "json")
    report = json.loads(written.out)
    assert report["presets"] == 5 and report["failed"] == {
        "tiny-broken": "fails with status 3 when bash sources it: tiny-broken: no such base"
    }
    assert report["snapshots"] == {"tiny-dense": True, "tiny-dense-deep": True}
    folder = tmp_path / "models/2026-11-30-ffffffff"
    text = (folder / "tiny-moe-2layer.yaml").read_text()
    assert text.splitlines()[3:] == [
        "type: tiny-moe-2layer",
        f"miles_commit: {'f' * 40}",
        "source: scripts/models/tiny-moe-2layer.sh",
        "model_args:",
        "  num-layers: 2",
        "  num-experts: 8",
        "  moe-layer-freq: '[0]*1+[1]*1'",
        "  hidden-size: 64",
    ]
    shown = cli("presets", "show", "tiny-moe-2layer", "--miles-version", "ffffffff")
    assert (
        shown.out.splitlines()[1]
        == "--num-layers 2 --num-experts 8 --moe-layer-freq [0]*1+[1]*1 --hidden-size 64"
    )
    (folder / "tiny-moe.yaml").write_text((folder / "tiny-moe.yaml").read_text().replace("64", "65"))
    (folder / "gone.yaml").write_text("type: gone\nmodel_args: {}\n")
    drift = cli("presets", "sync", "--miles-root", str(CHECKOUT), "--check")
    assert drift.code == 1
    assert "tiny-moe: differs from" in drift.out and "gone: left in" in drift.out


def test_a_preset_file_whose_name_is_no_model_type_is_never_run_and_said(tmp_path):
    tree = tmp_path / "miles"
    shutil.copytree(CHECKOUT, tree, symlinks=True)
    models = tree / "scripts" / "models"
    bad = "x$(touch pwned)\x1b]0;T\x07"
    (models / f"{bad}.sh").write_text("touch ../../ran\nMODEL_ARGS=(--num-layers 2)\n")
    found = presets.expand(tree)
    assert found[repr(bad)] == presets.Expanded(
        repr(bad), models / f"{bad}.sh", error=f"{bad!r} is not a model type's name: skipped"
    )
    assert "\x1b" not in found[repr(bad)].error and "\x07" not in found[repr(bad)].error  # repr escaped them
    assert not (tree / "ran").exists() and not (tmp_path / "pwned").exists()
    assert found["tiny-dense"].tokens == snapshot("tiny-dense")


def one_preset(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout holding one preset, ``a.sh`` (1 layer), readable by the sandbox's user; and it."""
    checkout = tmp_path / "checkout"
    models = checkout / "scripts/models"
    models.mkdir(parents=True)
    for folder in (tmp_path, checkout, checkout / "scripts", models):
        folder.chmod(0o755)
    preset = models / "a.sh"
    preset.write_text("MODEL_ARGS=(--num-layers 1)\n")
    return checkout, preset


def test_a_process_expands_once_while_no_file_it_reads_changes(tmp_path, monkeypatch):
    """An import round-trips every case through the checkout's presets: read and hashed once, while
    each file's modification time stays (the door's stamp); an edit of the same length is seen."""
    checkout, preset = one_preset(tmp_path)
    hashed: list[object] = []
    real = presets.door.Tree.digest
    monkeypatch.setattr(presets.door.Tree, "digest", lambda self, *a, **k: hashed.append(a) or real(self, *a, **k))
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "1")
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "1")
    assert len(hashed) == 1
    before = preset.stat()
    preset.write_text("MODEL_ARGS=(--num-layers 3)\n")
    os.utime(preset, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "3")
    assert len(hashed) == 2
    found = presets.expand(checkout)
    found.clear()  # a caller's copy: the process's own stays whole
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "3")


def test_inside_a_read_of_the_tree_the_checkout_is_looked_at_once(tmp_path, monkeypatch):
    """An import's check of one test's cells asks for the presets once per cell: inside its read of
    the tree (memos.memo), the files are stamped once; after it, an edit is seen again."""
    checkout, preset = one_preset(tmp_path)
    stamped: list[object] = []
    real = presets.door.Tree.stamp
    monkeypatch.setattr(presets.door.Tree, "stamp", lambda self, *a: stamped.append(a) or real(self, *a))
    with memos.memo():
        assert presets.expand(checkout)["a"].tokens == ("--num-layers", "1")
        looked = len(stamped)
        preset.write_text("MODEL_ARGS=(--num-layers 2)\n")  # within a read, nothing may write it
        assert presets.expand(checkout)["a"].tokens == ("--num-layers", "1")
        assert len(stamped) == looked > 0
    before = preset.stat()
    os.utime(preset, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert presets.expand(checkout)["a"].tokens == ("--num-layers", "2")
    assert len(stamped) == 2 * looked
