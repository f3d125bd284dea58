"""One door to the checkout (issue 32): no module of runner/ outside ``runner/knowledge/checkout/``
opens a file of a miles checkout or runs git.

Two guards, as each sees what the other cannot. The scan reads every module's source: it finds
every git command and every read of an expression built from a checkout (a name that says so:
``miles_root``, ``checkout``, ``git``), in code no test reaches too. The audit hook watches what really
happens when the commands that take ``--miles-root`` run: every file opened below the checkout, by
whichever module, however the path was built.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner

RUNNER = Path(runner.__file__).parent
DOOR = RUNNER / "knowledge" / "checkout"
READS = {"open", "read_text", "read_bytes", "glob", "rglob", "iterdir", "scandir", "walk", "listdir", "stat"}
CHECKOUT_NAMES = ("miles_root", "checkout", "git")  # git: a folder of .git
# Modules that name a checkout next to a read without reading the checkout, each with why:
ALLOWED: dict[str, str] = {
    # the sandbox binds the tree read-only into bwrap for code of the checkout to run there: the one
    # other place the checkout is reached (DESIGN.md: code runs only in the sandbox)
    "sandbox/": "binds the checkout into the sandbox",
    # the import runs the test's own scripts in the sandbox, and reads the folder of tests it was
    # pointed at to list them; those reads are the import's input, as a spec is load's
    "importer/": "the import's own input, read in the sandbox or as the files it was pointed at",
}


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(RUNNER.rglob("*.py")):
        if path.is_relative_to(DOOR):
            continue
        relative = path.relative_to(RUNNER).as_posix()
        yield relative, ast.parse(path.read_text(encoding="utf-8"), filename=relative)


def runs_git(tree: ast.Module) -> list[int]:
    """Lines of a command list that starts with "git", or of a which("git")."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                found.append(node.lineno)
        if isinstance(node, ast.Call) and any(
            isinstance(a, ast.Constant) and a.value == "git" for a in node.args
        ):
            found.append(node.lineno)
    return found


def reads_a_checkout(tree: ast.Module) -> list[int]:
    """Lines where a read (open, read_text, glob, ...) takes an expression built from a checkout."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name not in READS:
            continue
        target = [node.func.value] if isinstance(node.func, ast.Attribute) else []
        names = {n.id for part in [*target, *node.args] for n in ast.walk(part) if isinstance(n, ast.Name)}
        if any(word in each for each in names for word in CHECKOUT_NAMES):
            found.append(node.lineno)
    return found


def allowed(relative: str) -> bool:
    return any(relative.startswith(prefix) for prefix in ALLOWED)


def test_no_module_outside_the_door_runs_git():
    offenders = {
        relative: lines for relative, tree in modules() if (lines := runs_git(tree)) and not allowed(relative)
    }
    assert offenders == {}


def test_no_module_outside_the_door_reads_a_checkout():
    offenders = {
        relative: lines
        for relative, tree in modules()
        if (lines := reads_a_checkout(tree)) and not allowed(relative)
    }
    assert offenders == {}


def test_the_scan_finds_what_it_looks_for():
    """The guards are worth what they catch: the old readers, as they were written."""
    old = ast.parse(
        "subprocess.run(['git', '-C', str(repo), 'rev-parse'])\n"
        "(miles_root / path).is_file() and (miles_root / path).read_text()\n"
        "sorted((checkout / MODELS).glob('*.sh'))\n"
    )
    assert runs_git(old) == [1]
    assert reads_a_checkout(old) == [2, 3]


WATCHING: list[Path] = []  # the checkout the audit hook watches; empty: it records nothing
OPENED: list[tuple[str, str]] = []  # (file, the innermost module of runner/ that opened it)


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not WATCHING or event not in ("open", "os.scandir", "os.listdir", "subprocess.Popen"):
        return
    target = str(args[1][0] if event == "subprocess.Popen" and args[1] else args[0])
    if event == "subprocess.Popen":
        if Path(target).name != "git":
            return
    elif not any(target.startswith(str(root)) for root in WATCHING):
        return
    frame = sys._getframe(1)
    while frame is not None and not frame.f_code.co_filename.startswith(str(RUNNER)):
        frame = frame.f_back
    where = Path(frame.f_code.co_filename).relative_to(RUNNER).as_posix() if frame else "<not runner>"
    OPENED.append((target, where))


HOOKED: list[bool] = []


def watch(roots: list[Path]) -> None:
    """Record what is opened below ``roots`` from now on (the hook, once added, stays: WATCHING
    switches it off again)."""
    if not HOOKED:
        sys.addaudithook(_audit)
        HOOKED.append(True)
    WATCHING[:] = roots


@pytest.fixture
def git_checkout(tmp_path: Path) -> Path:
    """The stand-in checkout as a git repository, readable by the sandbox's user."""
    import shutil

    from tests.conftest import DATA

    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", checkout)
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(
            ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", *command], check=True
        )
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    return checkout


@pytest.mark.allow_subprocess
def test_what_the_commands_that_take_a_checkout_open_of_it_is_opened_by_the_door(
    cli, in_repo, git_checkout, tmp_path
):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"extends: {in_repo / 'matrices/rocm/glm5-async.yaml'}\nrequires:\n  base: {{kind: git, contains: main}}\n"
    )
    watch([git_checkout, git_checkout.resolve()])
    try:
        root = str(git_checkout)
        done = [
            cli("presets", "list", "--miles-root", root),
            cli("list", str(spec), "--miles-root", root),
            cli("validate", "rocm/glm5-async", "--miles-root", root),
            cli("render", "rocm/glm5-async", "--miles-root", root),
        ]
    finally:
        WATCHING.clear()
    assert [d.code for d in done] == [0, 0, 0, 0], [d.err for d in done]
    outside = sorted(
        {where for _, where in OPENED if not (where.startswith("knowledge/checkout/") or allowed(where))}
    )
    assert outside == []
    assert any(where.startswith("knowledge/checkout/") for _, where in OPENED)  # the hook saw the door
