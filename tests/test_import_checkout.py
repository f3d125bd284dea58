"""import finds the miles checkout its test stands in (issue 51): the first miles tree at or above it,
said with its commit and flag catalog; a test in none is refused once, with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import display_path
from runner.knowledge.checkout import enclosing
from runner.spec.load import load
from tests.conftest import DATA, fake_checkout

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FAMILY = "tests/e2e/tiny_family"


def tree(folder: Path, *files: tuple[str, str]) -> Path:
    for name, text in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


PACKAGE = ("miles/__init__.py", "")


@pytest.mark.parametrize(
    ("files", "found"),
    [
        ([PACKAGE, (".git/HEAD", f"{COMMIT}\n")], True),
        ([PACKAGE, ("setup.py", 'setup(\n    name="miles",\n)\n')], True),
        ([PACKAGE, ("pyproject.toml", '[project]\nname = "miles"\n')], True),
        ([PACKAGE], False),  # a package named miles alone: a vendored copy, not a checkout
        ([PACKAGE, ("setup.py", 'setup(name="miles-tools")\n')], False),
        ([("miles/models/x.yaml", ""), (".git/HEAD", f"{COMMIT}\n")], False),  # run-matrix's own miles/ data
    ],
)
def test_a_miles_tree_holds_the_package_beside_what_says_it_is_miles(tmp_path, files, found):
    root = tree(tmp_path / "checkout", *files, ("tests/e2e/ckpt/test_x.py", ""))
    assert enclosing(root / "tests/e2e/ckpt/test_x.py") == (root.resolve() if found else None)
    assert enclosing(root / "tests/e2e") == (root.resolve() if found else None)


def test_the_nearest_tree_wins_and_a_linked_packaging_file_is_not_read(tmp_path):
    outer = tree(tmp_path / "outer", PACKAGE, (".git/HEAD", f"{COMMIT}\n"))
    inner = tree(outer / "vendor" / "miles-fork", PACKAGE, ("setup.py", 'setup(name="miles")\n'))
    assert enclosing(inner / "tests") == inner.resolve()
    linked = tree(tmp_path / "linked", PACKAGE)
    (linked / "setup.py").symlink_to(inner / "setup.py")
    assert enclosing(linked) is None


def test_a_test_in_a_git_checkout_imports_against_it_and_says_its_commit(cli, tmp_path):
    root = fake_checkout(tmp_path, "main-layout")
    tree(root, (".git/HEAD", f"{COMMIT}\n"))
    test = root / FAMILY / "test_nv_case.py"
    result = cli("import", str(test), "-o", str(tmp_path / "nv.yaml"))
    assert result.code == 0, result.err
    assert result.err.splitlines()[0] == (
        f"run-matrix: importing with the miles checkout {root} (the one {test} stands in; --miles-root DIR"
        f" names another): commit {COMMIT[:12]}; flags: the newest shipped catalog"
        f" ({_newest()}): it has no miles/utils/arguments.py"
    )
    assert (tmp_path / "nv.yaml").is_file()


def test_a_suite_of_miles_main_imports_against_its_own_tree_without_miles_root(cli, upstream_miles, tmp_path):
    """Before, without --miles-root, 6 of 95 tests were written and main's tests were checked against
    the PR-era flag catalog; the plain tree (no .git) is miles main all the same."""
    main = upstream_miles("31f1ca96")
    out = tmp_path / "ckpt"
    result = cli("import", str(main / "tests/e2e/ckpt"), "-o", str(out), "-j", "1")
    assert result.code == 0, result.err
    assert result.err.splitlines()[0] == (
        f"run-matrix: importing with the miles checkout {main} (the one {main / 'tests/e2e/ckpt'} stands in;"
        " --miles-root DIR names another): commit unknown: not a git checkout; flags: its own miles flags;"
        f" Megatron's and SGLang's from the shipped {_newest()}"
    )
    specs = sorted(path.name for path in out.glob("*.yaml"))
    assert specs == ["glm47_flash_ckpt.yaml", "qwen3_4B_ckpt.yaml"]
    versions = {load(path).data.get("miles_version") for path in out.rglob("*.yaml")} - {None}
    assert len(versions) == 1 and "31f1ca961a94cb860cec3b2dea34ec332bfa8f76".startswith(versions.pop())


@pytest.mark.parametrize("what", ["import/test_glm5_744b_a40b_4layer.py", "import"])
def test_a_path_in_no_checkout_is_refused_once_with_what_to_do(cli, tmp_path, what):
    path = DATA / what
    result = cli("import", str(path), "-o", str(tmp_path / "out"))
    assert (result.code, result.out) == (3, "")
    assert result.err == (
        f"run-matrix: {display_path(path)} lies in no miles checkout (no folder at or above it holds the miles package"
        " beside a .git, or a setup.py or pyproject.toml naming miles): name one with --miles-root DIR (or"
        " $MILES_ROOT), or import with the recorder's stand-ins for miles dc8b499b with --without-checkout\n"
    )
    assert not (tmp_path / "out").exists()


def test_without_checkout_and_miles_root_together_is_a_usage_error(cli, tmp_path):
    with pytest.raises(SystemExit) as exited:
        cli("import", str(DATA / "import"), "--without-checkout", "--miles-root", str(tmp_path))
    assert exited.value.code == 2


def _newest() -> str:
    from runner.knowledge import flags

    return flags.shipped()[-1].name
