"""State you can see (STYLE.md 27, issue 50): value types are frozen, processes start only behind the
seams that own them, and YAML is written by one module. Each scan reads every module of ``runner/``
with ``ast``, so code no test reaches is held to it too; what is allowed is listed here with why.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import runner

RUNNER = Path(runner.__file__).parent

# Modules that start processes. Anything else that needs one moves into run/ or sandbox/ (DESIGN.md:
# "Subprocesses start only in run/, sandbox/ and the door's git entry point").
STARTS_PROCESSES: dict[str, str] = {
    "run/": "every side effect of a run: prepare steps, Ray, the job, its services and hooks",
    "sandbox/": "the one place code of a checkout runs (bwrap, its probe, the collector's fork)",
    # the door's one git entry point: git.py's _git, given object ids only (test below)
    "knowledge/checkout/git.py": "what only git can tell of a checkout, asked of a hardened git",
    # the import's own modules, kept by the importer's work (issue 50 lists them for importer/):
    "importer/forks.py": "runs in the sandbox: forks once per script recorded from one load",
    "importer/guards.py": "runs in the sandbox: wraps subprocess to refuse it to the test script",
    "importer/workers.py": "import's warm worker processes of run-matrix's own (python -m ...workers)",
}
PROCESS_MODULES = frozenset({"subprocess", "multiprocessing", "_posixsubprocess", "pty"})
PROCESS_CALLS = ("fork", "forkpty", "exec", "spawn", "posix_spawn", "system", "popen")  # os.<name>*
PROCESS_NAMES = frozenset({"ProcessPoolExecutor", "create_subprocess_exec", "create_subprocess_shell"})
GIT = "knowledge/checkout/git.py"
GIT_ENTRY = "_git"  # the one function of git.py that runs git

YAML_WRITER = "spec/emit.py"  # the one YAML writer (STYLE.md 18)
YAML_WRITES = frozenset(
    {"dump", "safe_dump", "dump_all", "safe_dump_all", "emit", "serialize", "serialize_all"}
)

# Dataclasses left mutable without a "# mutable: why" line above them: the importer's, which its own
# work freezes or explains (issue 50); a new one anywhere is frozen or says why.
MUTABLE_PENDING = frozenset(
    {
        "importer/plan.py:ImportPlan",
        "importer/recorder.py:ExecuteTrainConfig",
        "importer/registrations.py:FromCI",
        "importer/suite.py:SuiteImported",
        "importer/trace.py:Trace",
    }
)


def modules() -> Iterator[tuple[str, str, ast.Module]]:
    for path in sorted(RUNNER.rglob("*.py")):
        relative = path.relative_to(RUNNER).as_posix()
        text = path.read_text(encoding="utf-8")
        yield relative, text, ast.parse(text, filename=relative)


def allowed(relative: str, table: dict[str, str]) -> bool:
    return any(relative == key or (key.endswith("/") and relative.startswith(key)) for key in table)


def starts_processes(tree: ast.Module) -> list[int]:
    """Lines that import a module for starting processes or call ``os.fork``, ``os.exec*``,
    ``os.spawn*``, ``os.posix_spawn*``, ``os.system``, ``os.popen`` (or import them from ``os``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [node.lineno for a in node.names if a.name.split(".")[0] in PROCESS_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in PROCESS_MODULES:
                found.append(node.lineno)
            elif top in ("os", "posix"):
                found += [node.lineno for a in node.names if a.name.startswith(PROCESS_CALLS)]
            found += [node.lineno for a in node.names if a.name in PROCESS_NAMES]
        elif isinstance(node, ast.Attribute):
            of_os = isinstance(node.value, ast.Name) and node.value.id in ("os", "posix")
            if (of_os and node.attr.startswith(PROCESS_CALLS)) or node.attr in PROCESS_NAMES:
                found.append(node.lineno)
    return sorted(set(found))


def writes_yaml(tree: ast.Module) -> list[int]:
    """Lines that call PyYAML's writers (``yaml.dump``, ``safe_dump``, ...) or import them."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml":
            if node.attr in YAML_WRITES or node.attr.endswith("Dumper"):
                found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "yaml":
            found += [node.lineno for a in node.names if a.name in YAML_WRITES or a.name.endswith("Dumper")]
    return sorted(set(found))


def mutable_dataclasses(text: str, tree: ast.Module) -> list[str]:
    """``Name:line`` of each dataclass that is not frozen and has no ``# mutable: why`` line above it."""
    lines = text.splitlines()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for decorator in node.decorator_list:
            if not _is_dataclass(decorator) or _frozen(decorator):
                continue
            above = lines[decorator.lineno - 2].strip() if decorator.lineno > 1 else ""
            if not (above.startswith("# mutable: ") and len(above) > len("# mutable: ") + 10):
                found.append(f"{node.name}:{node.lineno}")
    return found


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "dataclass") or (
        isinstance(target, ast.Attribute) and target.attr == "dataclass"
    )


def _frozen(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Call) and any(
        k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in decorator.keywords
    )


def test_processes_start_only_in_run_sandbox_and_the_doors_git():
    found = [
        f"runner/{relative}:{line}"
        for relative, _, tree in modules()
        if not allowed(relative, STARTS_PROCESSES)
        for line in starts_processes(tree)
    ]
    assert found == []  # move it into run/ or sandbox/, or add it above with why


def test_every_git_command_goes_through_the_one_entry_point():
    door = [relative for relative, _, tree in modules() if relative.startswith("knowledge/checkout/")]
    assert [r for r, _, t in modules() if r in door and r != GIT and starts_processes(t)] == []
    tree = ast.parse((RUNNER / GIT).read_text(encoding="utf-8"))
    callers = {
        function.name
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "subprocess"
        and node.attr in ("run", "Popen", "call", "check_call", "check_output")
    }
    assert callers == {GIT_ENTRY}


def test_the_allowed_places_are_there():
    names = {relative for relative, _, _ in modules()}
    for key in STARTS_PROCESSES:
        assert any(n == key or (key.endswith("/") and n.startswith(key)) for n in names), key


def test_yaml_is_written_only_by_emit():
    found = [
        f"runner/{relative}:{line}"
        for relative, _, tree in modules()
        if relative != YAML_WRITER
        for line in writes_yaml(tree)
    ]
    assert found == []  # write through runner.spec.emit (dump for specs, plain for other data files)


def test_dataclasses_are_frozen_or_say_why_not():
    found = [
        f"runner/{relative}:{name}"
        for relative, text, tree in modules()
        for name in mutable_dataclasses(text, tree)
        if f"{relative}:{name.partition(':')[0]}" not in MUTABLE_PENDING
    ]
    assert found == []  # @dataclass(frozen=True), or a "# mutable: why" line right above it


def test_the_pending_mutable_dataclasses_still_exist():
    present = {
        f"{relative}:{name.partition(':')[0]}"
        for relative, text, tree in modules()
        for name in mutable_dataclasses(text, tree)
    }
    assert sorted(MUTABLE_PENDING - present) == []  # frozen or explained since: drop it from the list


def test_the_scans_see_every_form():
    source = """
import subprocess, os
import multiprocessing.pool
from subprocess import run
from os import execvp, getcwd
from concurrent.futures import ProcessPoolExecutor
import yaml
from yaml import safe_dump
os.fork()
os.spawnv(0, "x", [])
os.system("true")
os.popen("true")
os.posix_spawn("x", [], {})
yaml.dump({})
yaml.safe_dump({})
yaml.safe_load("")
os.getcwd()
"""
    tree = ast.parse(source)
    assert starts_processes(tree) == [2, 3, 4, 5, 6, 9, 10, 11, 12, 13]
    assert writes_yaml(tree) == [8, 14, 15]
    classes = (
        "from dataclasses import dataclass\n@dataclass\nclass A: ...\n# mutable: it gathers as it goes\n"
    )
    classes += "@dataclass\nclass B: ...\n@dataclass(frozen=True)\nclass C: ...\n"
    assert mutable_dataclasses(classes, ast.parse(classes)) == ["A:3"]
