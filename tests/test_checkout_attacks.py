"""Attacks on the paths that read a miles checkout (issue 32): each is what a hostile checkout's
author would try; none may run a program of the checkout's, show a host file's content, or leave
the tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner import pipeline
from runner.knowledge import checkout
from runner.results.history.recorder import miles_commit
from runner.run.requires import check
from tests.test_model import VALID

SECRET = "s3cret-host-content"
MISSING = "f" * 40  # an object the checkout does not hold


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def hostile_repo(root: Path, marker: Path) -> Path:
    """A checkout whose .git/config runs `id > marker` on a lazy fetch, on fsmonitor, on a hook."""
    repo = root / "miles"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    run = f"sh -c 'id > {marker}' #"
    with (repo / ".git/config").open("a") as config:
        config.write(
            "[core]\n"
            "\trepositoryformatversion = 1\n"
            f'\tsshCommand = "{run}"\n'
            f'\tfsmonitor = "{run}"\n'
            f'\thooksPath = "{root}"\n'
            "[extensions]\n\tpartialClone = origin\n"
            '[remote "origin"]\n\turl = ssh://example.invalid/miles\n\tpromisor = true\n'
            "\tpartialclonefilter = blob:none\n"
            f"[include]\n\tpath = {root / 'more.config'}\n"
        )
    (root / "more.config").write_text(f'[core]\n\tpager = "{run}"\n')
    (repo / ".git/refs/heads/evil").write_text(MISSING + "\n")
    return repo


@pytest.mark.allow_subprocess
def test_a_git_requirement_runs_no_program_of_the_checkout(write, tmp_path):
    marker = tmp_path / "ran"
    repo = hostile_repo(tmp_path, marker)
    cell = pipeline.cell(
        write(
            "spec.yaml",
            VALID + "requires:\n  a: {kind: git, contains: evil}\n"
            f"  b: {{kind: git, contains: {MISSING}}}\n  c: {{kind: git, contains: main}}\n",
        )
    )
    found = check(cell, repo, {})
    assert not marker.exists()
    assert [r.met for r in found] == [False, False, True]


def fake_git(root: Path, head: str) -> Path:
    (root / ".git/refs/heads").mkdir(parents=True)
    (root / ".git/HEAD").write_text(head)
    return root


def test_a_head_naming_a_host_file_is_no_commit(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    repo = fake_git(tmp_path / "miles", f"ref: {secret}\n")
    assert checkout.head_commit(repo) is None
    assert miles_commit(repo) == ""
    climbing = fake_git(tmp_path / "other", "ref: refs/../../shadow\n")
    assert checkout.head_commit(climbing) is None
    assert miles_commit(climbing) == ""


def test_a_ref_holding_text_is_no_commit(tmp_path):
    repo = fake_git(tmp_path / "miles", "ref: refs/heads/main\n")
    (repo / ".git/refs/heads/main").write_text(SECRET + "\n")
    assert checkout.head_commit(repo) is None
    assert miles_commit(repo) == ""


def test_a_git_file_pointing_out_of_the_tree_is_not_followed(tmp_path):
    outside = fake_git(tmp_path / "elsewhere", "a" * 40 + "\n") / ".git"
    repo = tmp_path / "miles"
    repo.mkdir()
    (repo / ".git").write_text(f"gitdir: {outside}\n")
    assert checkout.head_commit(repo) is None
    assert miles_commit(repo) == ""
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(outside)
    assert checkout.head_commit(linked) is None
    assert miles_commit(linked) == ""


@pytest.mark.allow_subprocess
def test_presets_show_never_prints_a_host_file_as_the_commit(cli, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    repo = fake_git(tmp_path / "miles", f"ref: {secret}\n")
    (repo / "scripts/models").mkdir(parents=True)
    (repo / "scripts/models/tiny.sh").write_text("MODEL_ARGS=(--num-layers 2)\n")
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    done = cli("presets", "show", "tiny", "--miles-root", str(repo))
    assert done.code == 0, done.err
    assert done.out.splitlines()[0] == "# tiny: scripts/models/tiny.sh (miles commit unknown)"
    assert SECRET not in done.out + done.err


def test_the_door_keeps_every_read_in_the_tree_and_bounded(tmp_path):
    from runner.knowledge.checkout import CheckoutError, OutsideCheckout, TooLarge, Tree

    secret = tmp_path / "shadow"
    secret.write_text(SECRET)
    root = tmp_path / "miles"
    (root / "scripts/models").mkdir(parents=True)
    (root / "scripts/models/a.sh").write_text("MODEL_ARGS=()\n")
    (root / "scripts/models/out.sh").symlink_to(secret)
    (root / "scripts/models/linked").symlink_to(tmp_path)
    (root / "big").write_bytes(b"x" * 101)
    os.mkfifo(root / "fifo")
    tree = Tree.at(root)
    assert [str(p) for p in tree.files("scripts/models", recursive=True)] == ["scripts/models/a.sh"]
    for relative in ("scripts/models/out.sh", "../shadow", str(secret), "scripts/models/linked/shadow"):
        with pytest.raises(OutsideCheckout):
            tree.read_text(relative)
        assert not tree.exists(relative)
    with pytest.raises(TooLarge):
        tree.read_bytes("big", limit=100)
    with pytest.raises(CheckoutError, match="is not a regular file"):
        tree.read_bytes("fifo")  # opened without blocking: a FIFO does not hang the read


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("refs/heads/main", True),
        ("refs/heads/fix/clamp", True),
        ("refs/tags/v1.0", True),
        ("refs/../../etc/shadow", False),
        ("/etc/shadow", False),
        ("refs/heads/.hidden", False),
        ("refs/heads/x.lock", False),
        ("refs/heads/a b", False),
        ("refs/heads/a@{1}", False),
        ("refs/heads/a//b", False),
        ("refs/heads/a\x00b", False),
        ("refs/heads/", False),
        ("@", False),
    ],
)
def test_ref_names_are_validated_as_git_validates_them(name, valid):
    from runner.knowledge.checkout import valid_ref

    assert valid_ref(name) is valid


PARSER_BREAKERS = {  # what a hostile file holds to crash Python's parser, not with a SyntaxError
    "MemoryError": "-" * 200_000 + "1\n",
    "RecursionError": "x = " + "+".join(["1"] * 200_000) + "\n",
}


@pytest.mark.parametrize("crash", sorted(PARSER_BREAKERS))
def test_a_file_a_check_names_that_breaks_pythons_parser_is_a_reason_not_a_traceback(tmp_path, crash):
    from runner.knowledge import own_checks

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/evil.py").write_text(PARSER_BREAKERS[crash])
    assert own_checks.read(tmp_path, "tests/evil.py:check") == (
        f"tests/evil.py in the checkout at {tmp_path} cannot be parsed: {crash}: nested too deeply for"
        " Python's parser"
    )


@pytest.mark.allow_subprocess
def test_validate_with_a_checkout_whose_flags_break_the_parser_exits_with_the_reason(cli, tmp_path):
    from tests.conftest import DATA

    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    (root / "miles/utils/arguments.py").write_text(PARSER_BREAKERS["MemoryError"])
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    done = cli("validate", "rocm/glm5-async", "--miles-root", str(root))
    assert (done.code, done.err.strip()) == (
        3,
        f"run-matrix: miles/utils/arguments.py in the checkout at {root} cannot be parsed: MemoryError:"
        " nested too deeply for Python's parser",
    )


def test_a_checkout_python_file_the_door_cannot_read_or_parse_has_no_docstring(tmp_path):
    from runner.knowledge.checkout import Tree, docstring

    secret = tmp_path / "notes.py"
    secret.write_text(f'"""{SECRET}"""\n')
    root = tmp_path / "miles"
    root.mkdir()
    (root / "test_ok.py").write_text('"""Checks a thing."""\n')
    (root / "test_out.py").symlink_to(secret)
    (root / "test_crash.py").write_text(PARSER_BREAKERS["RecursionError"])
    os.mkfifo(root / "test_fifo.py")
    tree = Tree.at(root)
    assert docstring(tree, "test_ok.py") == "Checks a thing."
    for name in ("test_out.py", "test_crash.py", "test_fifo.py", "../notes.py"):
        assert docstring(tree, name) == ""


def test_a_walk_of_the_checkout_enters_no_linked_folder_and_is_bounded(tmp_path):
    from runner.knowledge.checkout import TooLarge, Tree

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/test_secret.py").write_text(SECRET)
    root = tmp_path / "miles"
    (root / "tests/e2e").mkdir(parents=True)
    (root / "tests/e2e/test_a.py").write_text("")
    (root / "tests/linked").symlink_to(tmp_path / "elsewhere")
    tree = Tree.at(root)
    walked = [(str(folder), others, folders) for folder, others, folders in tree.walk("tests")]
    assert walked == [("tests", ["linked"], ["e2e"]), ("tests/e2e", ["test_a.py"], [])]
    with pytest.raises(TooLarge):
        list(tree.walk(limit=2))


@pytest.mark.allow_subprocess
def test_import_refuses_a_test_of_the_checkout_that_links_out_of_it(cli, tmp_path):
    """Before, the sandbox bound the file the link named and ran it: a file of this machine."""
    from tests.conftest import DATA

    tmp_path.chmod(0o755)
    outside = tmp_path / "notes.py"
    outside.write_text(f"raise SystemExit({SECRET!r})\n")
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    (root / "tests/e2e").mkdir(parents=True)
    (root / "tests/e2e/test_evil.py").symlink_to(outside)
    test = root / "tests/e2e/test_evil.py"
    done = cli("import", str(test), "-o", str(tmp_path / "out.yaml"), "--miles-root", str(root))
    assert (done.code, done.err.strip().splitlines()[-1]) == (
        2,
        f"run-matrix: {test} leads out of the checkout at {root}: run-matrix imports only the checkout's"
        " own files (copy the test into the checkout)",
    )
    assert SECRET not in done.out + done.err
