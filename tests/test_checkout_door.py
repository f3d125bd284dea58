"""One door to the checkout (issue 32): no module of runner/ outside ``runner/knowledge/checkout/``
opens a file of a miles checkout or runs git, and ``render``, ``validate`` and ``list`` never ask the
import (``runner/importer/``) anything.

Three guards, as each sees what the others cannot. The scan reads every module's source: it finds
every git command and every read of an expression built from a checkout (a name that says so:
``miles_root``, ``checkout``, ``git``, or a test ``script``), in code no test reaches too. The audit
hook watches what really happens when the commands that take ``--miles-root`` run: every file opened
below the checkout, by whichever module, however the path was built. The import graph follows every
``import`` (one inside a function too) from the modules of render, validate and list.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import runner

RUNNER = Path(runner.__file__).parent
DOOR = RUNNER / "knowledge" / "checkout"
READS = {"open", "read_text", "read_bytes", "glob", "rglob", "iterdir", "scandir", "walk", "listdir", "stat"}
# git: a folder of .git; script, test: a miles test is a file of the checkout
CHECKOUT_NAMES = ("miles_root", "checkout", "git", "script", "test")
# The only modules outside the door that reach a checkout's files, each with why:
ALLOWED: dict[str, str] = {
    # the sandbox binds the tree read-only into bwrap for code of the checkout to run there: the one
    # other place the checkout is reached (DESIGN.md: code runs only in the sandbox)
    "sandbox/": "binds the checkout into the sandbox",
    # runs inside the sandbox (harness.SANDBOX), never on the host: the test it parses is the file
    # bwrap bound, read with the sandbox's rights
    "importer/script_checks.py": "runs in the sandbox: reads the test as bwrap binds it",
    # the recording cache's key is a hash of every file the sandbox is shown (binds.script_reads):
    # regular files only, opened without following a link or blocking, bounded in count and bytes;
    # nothing of them leaves the hash
    "importer/recordings.py": "hashes what the sandbox binds, as a recording's cache key",
}
# The modules of render, validate and list (and of the pipeline they share): none may reach the import
RENDER_PATH = (
    "runner.cli.render",
    "runner.cli.validate",
    "runner.cli.cells",
    "runner.launch.checkout",
    "runner.pipeline",
)
IMPORTER = "runner.importer"


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
        if any(_names_the_door(part) for part in target):
            continue  # a method of the door's Tree (``checkout.Tree.at(root).walk()``) is the door's read
        names = {n.id for part in [*target, *node.args] for n in ast.walk(part) if isinstance(n, ast.Name)}
        if any(word in each for each in names for word in CHECKOUT_NAMES):
            found.append(node.lineno)
    return found


def _names_the_door(expression: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "Tree") or (isinstance(n, ast.Attribute) and n.attr == "Tree")
        for n in ast.walk(expression)
    )


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
        "os.walk(test_folder)\n"
        "checkout.Tree.at(test_folder).walk()\n"  # the door's own read
    )
    assert runs_git(old) == [1]
    assert sorted(reads_a_checkout(old)) == [2, 3, 4]


def test_each_importer_module_the_scan_allows_runs_in_the_sandbox_or_says_why():
    from runner.importer import harness

    sandboxed = {f"importer/{name}" for name in harness.SANDBOX}
    host_side = {"importer/recordings.py"}  # the one host reader: its entry above says why
    assert {m for m in ALLOWED if m.startswith("importer/")} <= sandboxed | host_side


Source = Callable[[str], str | None]


def own_source(module: str) -> str | None:
    """The text of a module of run-matrix's by its dotted name; None for one of another package."""
    path = RUNNER.parent.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    return None


def imports_of(module: str, text: str) -> set[str]:
    """Every module ``text`` imports, at its top or inside a function, and the names it imports from
    each (``from runner import atomic`` may import the module ``runner.atomic``)."""
    package = module if _is_package(module) else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return found


def _with_packages(module: str) -> list[str]:
    """``a.b.c`` and the packages importing it runs first: ``a``, ``a.b``."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _is_package(module: str) -> bool:
    return RUNNER.parent.joinpath(*module.split("."), "__init__.py").is_file()


def reaching(starts: tuple[str, ...], module: str, source: Source = own_source) -> dict[str, list[str]]:
    """For each module named ``module`` or below it that ``starts`` import, directly or through
    others (a package's ``__init__`` too), the chain of imports that reaches it."""
    chains: dict[str, list[str]] = {start: [start] for start in starts}
    waiting = list(starts)
    found: dict[str, list[str]] = {}
    while waiting:
        current = waiting.pop()
        text = source(current)
        if text is None:
            continue
        for name in sorted({p for each in imports_of(current, text) for p in _with_packages(each)}):
            asks = name == module or name.startswith(f"{module}.")
            if name in chains or not (asks or source(name) is not None):
                continue  # seen, or not a module of run-matrix's (a class, another package)
            chains[name] = [*chains[current], name]
            if asks:
                found[name] = chains[name]
            else:
                waiting.append(name)
    return found


def test_render_validate_and_list_never_import_the_importer():
    """render asks the door and knowledge/ for a checkout's conventions (knowledge/conventions.py),
    never the import's recorder; the YAML writer they share is runner/spec/emit.py."""
    assert reaching(RENDER_PATH, IMPORTER) == {}


@pytest.mark.parametrize(
    ("module", "line"),
    [
        # the old way render learnt conventions: a lazy import inside a function
        (
            "runner.launch.checkout",
            "def conventions():\n    from runner.importer.observed import checkout_conventions\n",
        ),
        # a module of knowledge/ on the render path that writes YAML through the import's writer
        ("runner.knowledge.preset_sync", "from runner.importer.emit import dump\n"),
    ],
)
def test_the_import_graph_finds_a_render_module_that_asks_the_importer(module, line):
    def source(name: str) -> str | None:
        text = own_source(name)
        return f"{text}\n{line}" if name == module and text is not None else text

    found = reaching(RENDER_PATH, IMPORTER, source)
    assert found, "a render-path module importing runner.importer must fail the door test"
    assert any(module in chain for chain in found.values())


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


@pytest.mark.allow_subprocess
def test_what_import_opens_of_the_checkout_here_is_opened_by_the_door_or_an_allowed_module(cli, tmp_path):
    """Import runs the tests in the sandbox; on this machine it reads the checkout only through the
    door, and hashes it for the recording cache (importer/recordings.py, allowed above)."""
    import shutil

    from tests.conftest import DATA
    from tests.test_importer_suite import FAMILY

    tmp_path.chmod(0o755)  # read in the sandbox as the unprivileged user nobody
    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", checkout)
    shutil.copytree(DATA / "main-layout", checkout, dirs_exist_ok=True)
    OPENED.clear()
    watch([checkout, checkout.resolve()])
    try:
        done = cli(
            "import", str(checkout / FAMILY), "-o", str(tmp_path / "tiny"), "--miles-root", str(checkout)
        )
    finally:
        WATCHING.clear()
    assert done.code == 0, done.err
    outside = sorted(
        {where for _, where in OPENED if not (where.startswith("knowledge/checkout/") or allowed(where))}
    )
    assert outside == []
