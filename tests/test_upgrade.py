"""run-matrix upgrade on a copy of the shipped matrices: moving PR-era specs to miles main."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import schemas
from runner.knowledge import flags
from runner.port.files import schema_line
from runner.spec import locate
from runner.spec.compose import compose
from runner.spec.load import load
from runner.upgrade import Target, of_version
from runner.upgrade.plan import plan
from runner.upgrade.subject import subject
from tests.conftest import DATA

MATRICES = locate.BUNDLED_MATRICES
MAIN = "31f1ca96"


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
    assert result.out.endswith("validated: 0 errors, 1 warning\n")


def test_upgrade_says_each_todo_once(cli, tree):
    result = cli("upgrade", "nv/glm5-colocate", "--to-version", MAIN)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1] == (
        "  args.misc.disable-weights-backuper (deleted)  (a TODO: its warning below says what changed)"
    )
    assert result.out.count("was removed by miles PR #2223") == 1
    assert result.out.count("Upstream instead: --rematerialize-param-from-master-weight") == 1
    said = [line for line in lines if "Upstream instead" in line]
    assert said[0].startswith(
        "matrices/nv/glm5-colocate-31f1ca96.yaml:12: warning [G6] todo.args.misc.disable-weights-backuper: "
        "left for a person: --disable-weights-backuper (set to True) was removed by miles PR #2223"
    )


def test_upgrade_of_the_rocm_spec_leaves_its_pr_era_branch_requirements_to_a_person(cli, tree):
    result = cli("upgrade", "rocm/glm5-async", "--to-version", MAIN, "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["changes"] == []
    assert report["todo"]["requires.indexer-topk-clamp"] == (
        "requires.indexer-topk-clamp (the miles checkout must contain fix/glm5-indexer-topk-clamp) was written "
        "for miles dc8b499b; whether miles 31f1ca96 contains it is unknown without a checkout (--miles-root). "
        "Keep it where that fix is still needed and can be fetched; else delete it "
        "(requires: {indexer-topk-clamp: !delete}) and say why: until then an unmet requirement skips the cell"
    )
    assert set(report["todo"]) == {"requires.indexer-topk-clamp", "requires.sparse-mla-gfx950"}
    assert [(p["severity"], p["rule"]) for p in report["problems"]] == [("warning", "G6")] * 2


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


def test_upgrade_from_a_checkout_without_git_names_it_by_its_flags(cli, tree, upstream_miles):
    result = cli("upgrade", "nv/glm5-colocate", "--miles-root", str(upstream_miles("31f1ca96")))
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


def test_f1_against_a_newer_checkout_points_to_upgrade(cli, tree, upstream_miles):
    main = upstream_miles("31f1ca96")  # miles main's tree, without .git
    result = cli("validate", "nv/glm5-colocate", "--miles-root", str(main))
    assert result.code == 2
    assert (
        "  ==> this spec is for miles dc8b499b, the checkout is 31f1ca96: run-matrix upgrade nv/glm5-colocate "
        f"--miles-root {main}\n"
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


def _pr_era(root: Path) -> list[str]:
    """Every spec and base of the tree that resolves to miles dc8b499b (profiles and components aside)."""
    found = []
    for path in sorted(root.rglob("*.yaml")):
        parts = path.relative_to(root).parts
        if parts[0] in ("hardware", "components") or path.stem.endswith(MAIN):
            continue
        if str(compose(path).data.get("miles_version", "")).startswith("dc8b499b"):
            found.append(path.relative_to(root).with_suffix("").as_posix())
    return found


def test_each_pr_era_spec_moves_to_main_with_0_errors_and_every_change_explained(cli, tree):
    specs = _pr_era(tree)
    assert {"base/glm5-744b-a40b-4layer", "nv/glm5-colocate", "rocm/glm5-async"} <= set(specs)
    for spec in specs:
        result = cli("upgrade", spec, "--to-version", MAIN, "--format", "json")
        assert result.code == 0, (spec, result.out, result.err)
        report = json.loads(result.out)
        assert [p for p in report["problems"] if p["severity"] == "error"] == [], spec
        overlay = load(tree / f"{spec}-{MAIN}.yaml").data
        explained = {key for keys in overlay["why"] for key in keys.split(", ")}
        assert "miles_version" in explained
        for change in report["changes"]:
            assert change["why"] and change["key"] in explained, (spec, change)
            if change["value"] is None and change["key"] in report["todo"]:
                assert overlay["todo"][change["key"]] == report["todo"][change["key"]]


def test_a_base_is_validated_as_the_specs_that_extend_it_use_it(cli, tree):
    result = cli("upgrade", "base/glm5-744b-a40b-4layer", "--to-version", MAIN)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "wrote matrices/base/glm5-744b-a40b-4layer-31f1ca96.yaml: miles dc8b499b -> 31f1ca96"
    assert "  follows: each spec that extends it runs on its hardware's stack of miles 31f1ca96" in lines
    assert (
        "  a base: validated as matrices/nv/glm5-colocate.yaml, matrices/nv/glm5-main-ci.yaml, "
        "matrices/nv/glm5-main.yaml, matrices/rocm/glm5-async.yaml use it"
    ) in lines
    assert lines[-4:-2] == [
        "validated: 0 errors, 0 warnings",
        "and 1 at the lines of the specs that extend it (their own flags): "
        "run-matrix upgrade matrices/nv/glm5-colocate.yaml --to-version 31f1ca96",
    ]
    assert lines[-2].startswith(
        "matrices/nv/glm5-colocate.yaml:59: error [F1] args.misc.disable-weights-backuper: "
        "--disable-weights-backuper is not a flag of miles 31f1ca96"
    )
    text = (tree / "base/glm5-744b-a40b-4layer-31f1ca96.yaml").read_text()
    assert "extends: glm5-744b-a40b-4layer.yaml\nmiles_version: 31f1ca96\nwhy:\n" in text
    assert (tree / "nv/glm5-colocate.yaml").read_text().startswith("# yaml-language-server")  # untouched


def test_a_moved_base_breaking_an_extender_fails_the_upgrade(cli, tree):
    """An extender that deletes a flag the base sets: moving the base (which drops the flag) leaves
    the extender's !delete with nothing to delete; that is the upgrade's doing, so it is an error."""
    base = tree / "base" / "old.yaml"
    base.write_text("miles_version: dc8b499b\nargs:\n  misc:\n    tito-allowed-append-roles: [tool]\n")
    (tree / "nv" / "uses-old.yaml").write_text(
        "extends: [glm5-colocate.yaml, ../base/old.yaml]\n"
        "args:\n  misc:\n    tito-allowed-append-roles: !delete\n"
    )
    result = cli("upgrade", "base/old", "--to-version", MAIN, "--format", "json")
    assert result.code == 2, result.err
    report = json.loads(result.out)
    assert report["checked_through"] == ["matrices/nv/uses-old.yaml"]
    assert [(p["rule"], p["key"]) for p in report["problems"] if p["severity"] == "error"] == [
        ("delete", "args.misc.tito-allowed-append-roles")
    ]


def test_a_base_nothing_extends_is_checked_as_validate_checks_a_base(cli, tree):
    (tree / "base" / "alone.yaml").write_text(
        "miles_version: dc8b499b\nargs: 7\nmodel:\n  type: glm5-744B-A40B_4layer\n"
    )
    result = cli("upgrade", "base/alone", "--to-version", MAIN, "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["checked_through"], report["changes"], report["problems"]) == ([], [], [])


def test_an_extends_entry_written_escaped_is_refused_at_its_line(cli, tree):
    (tree / "nv" / "escaped.yaml").write_text(
        'extends: "\\x2e./base/glm5-744b-a40b-4layer.yaml"\nhardware: h200\n'
    )
    result = cli("upgrade", "base/glm5-744b-a40b-4layer", "--to-version", MAIN)
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "run-matrix: matrices/nv/escaped.yaml:1: extends '../base/glm5-744b-a40b-4layer.yaml', but not as "
        "plain text on its lines (escaped?): write the path as it is, then upgrade the base again\n"
    )
    assert not (tree / "base/glm5-744b-a40b-4layer-31f1ca96.yaml").exists()


def test_a_held_out_spec_keeps_and_flags_what_changed_meaning_under_the_same_name(cli, tree):
    (tree / "nv/older.yaml").write_text(
        "extends: glm5-colocate.yaml\n"
        "args:\n  grpo:\n    advantage-estimator: on_policy_distillation\n"
        "  misc:\n    use-session-server: true\n    update-weight-transfer-mode: p2p\n"
    )
    result = cli("upgrade", "nv/older", "--to-version", MAIN, "--format", "json")
    report = json.loads(result.out)
    todo = report["todo"]
    assert todo["args.grpo.advantage-estimator"].startswith(
        "--advantage-estimator (set to 'on_policy_distillation') changed between miles dc8b499b and 31f1ca96: "
        "at dc8b499b --advantage-estimator [miles] str choices: grpo, gspo, reinforce_plus_plus, "
        "reinforce_plus_plus_baseline, ppo, on_policy_distillation"
    )
    assert todo["args.misc.use-session-server"].startswith(
        "--use-session-server (set to True) changed between miles dc8b499b and 31f1ca96: "
        "at dc8b499b --use-session-server [miles] switch"
    )
    assert "args.misc.update-weight-transfer-mode" not in todo  # its choices grew: p2p still one
    assert set(todo) == {
        "args.grpo.advantage-estimator",
        "args.misc.use-session-server",
        "args.misc.disable-weights-backuper",
    }
    assert "advantage-estimator" in (tree / "nv/older-31f1ca96.yaml").read_text()


@pytest.mark.allow_subprocess
def test_a_branch_requirement_the_target_checkout_contains_moves_without_a_todo(tree, tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "fix"], check=True)
    subprocess.run([*git, "branch", "fix/glm5-indexer-topk-clamp"], check=True)
    moved = subject(tree / "rocm/glm5-async.yaml")
    target = of_version(MAIN)
    steps = plan(moved, flags.load(flags.shipped()[0]), Target(target.version, target.catalog, checkout))
    assert list(steps.todo) == ["requires.sparse-mla-gfx950"]
    assert (
        f"the miles checkout {checkout} does not know fix/glm5-sparse-mla-gfx950: fetch it"
        in (steps.todo["requires.sparse-mla-gfx950"])
    )


def test_an_overlay_written_outside_the_repository_names_a_schema_that_resolves_from_its_folder(
    cli, tree, tmp_path
):
    """An editor resolves $schema against the folder as it opened the file (a link not followed)."""
    (tmp_path / "shallow").mkdir()
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "link").symlink_to(tmp_path / "shallow")
    out = tmp_path / "a" / "b" / "c" / "link" / "moved.yaml"
    assert cli("upgrade", "nv/glm5-colocate", "--to-version", MAIN, "-o", str(out)).code == 0
    first = out.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    named = first.partition("$schema=")[2]
    schema = Path(schemas.__file__).parent / "spec.schema.json"
    assert (
        Path(os.path.normpath(os.path.join(out.parent, named))) == schema.resolve()
    )  # as the editor reads it
    assert Path(out.parent, named).resolve() == schema.resolve()  # as the system reads it
    # in run-matrix's own tree the path is relative, so that it travels with the clone
    assert schema_line(schema.parents[1] / "matrices" / "nv" / "x.yaml") == (
        "yaml-language-server: $schema=../../schemas/spec.schema.json"
    )


@pytest.mark.parametrize(
    "suffix",
    ["$(touch /tmp/x)", "\nx: 1", "${env:HOME}", "\x1b]0;TITLE\x07"],
    ids=["command", "newline", "ref", "escape"],
)
def test_a_checkout_flag_that_is_no_flag_name_is_said_and_never_written(
    cli, tree, tmp_path, upstream_miles, suffix
):
    checkout = tmp_path / "miles"
    shutil.copytree(upstream_miles(MAIN), checkout)
    (checkout / ".git").mkdir()
    (checkout / ".git" / "HEAD").write_text("31f1ca961a94cb860cec3b2dea34ec332bfa8f76\n")  # miles main's
    arguments = checkout / "miles/utils/arguments.py"
    text = arguments.read_text()
    before = text[: text.index('"--rollout-batch-size",')]
    line = before[: before.rindex("add_argument(")].count("\n") + 1  # the call's line, as argparse's
    arguments.write_text(text.replace('"--rollout-batch-size",', f"{'--rollout-batch-size' + suffix!r},", 1))
    result = cli("upgrade", "nv/glm5-colocate", "--miles-root", str(checkout))
    name = "--rollout-batch-size" + suffix
    assert (result.code, result.err) == (
        0,
        f"run-matrix: the checkout at {checkout}: miles/utils/arguments.py:{line}: {name!r} is not a flag name "
        "(letters, digits, - and _ after the leading --: skipped)\n",
    )
    written = (tree / "nv/glm5-colocate-31f1ca96.yaml").read_text()
    assert (
        suffix.strip() not in written
        and "args.rollout.rollout-batch-size: '--rollout-batch-size is not" in written
    )
    checked = cli("validate", "nv/glm5-colocate", "--miles-root", str(checkout), "--no-cache")
    said = (
        f"warning [flag-name] miles_version: the checkout's miles/utils/arguments.py:{line}: {name!r} is not"
    )
    assert said in checked.out and "\x1b" not in checked.out
