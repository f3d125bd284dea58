"""State you can see (STYLE.md 27, issue 50): a memo is declared in one module (``runner/memos.py``)
with why it cannot go stale, value types are frozen, processes start only behind the seams that own
them, and YAML is written by one module. Each scan reads every module of ``runner/`` with ``ast``, so
code no test reaches is held to it too; what is allowed is listed here with why.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import runner
from runner import memos

RUNNER = Path(runner.__file__).parent

MEMO_MODULE = "memos.py"  # the one module that declares memos (remember, Table) and the read scope
# Modules that still keep a memo of their own, each with why (a new one is declared through memos):
OWN_MEMOS: dict[str, str] = {
    "importer/trace.py": "runs in the sandbox's interpreter (loaded by path), which records one run: a file's text read once",
}
# Module-level containers filled after import that are no memo, each with why:
MODULE_STATE: dict[str, str] = {
    "memos.py": "the open reads of a tree and the register of memos",
    "check/__init__.py": "RULES: the rules, registered by their decorator when their modules are imported",
    "validate/inputs.py": "_RECORDING: who listens to the one audit hook (a hook cannot be removed)",
    "sandbox/missing.py": "runs in the sandbox's interpreter, never run-matrix's: the stand-ins' registry",
    "importer/recordings.py": "a bound tree's hash under its stamp (a changed tree has another), and the stamps held within held() (importer/__init__.py)",
}
CACHES = frozenset({"cache", "lru_cache"})  # functools' memo decorators

# Modules that start processes. Anything else that needs one moves into run/ or sandbox/ (DESIGN.md:
# "Subprocesses start only in run/, sandbox/ and the door's git entry point").
STARTS_PROCESSES: dict[str, str] = {
    "run/": "every side effect of a run: prepare steps, Ray, the job, its services and hooks",
    "sandbox/": "the one place code of a checkout runs (bwrap, its probe, the collector's fork)",
    # the door's one git entry point: git.py's _git, given object ids only (test below)
    "knowledge/checkout/git.py": "what only git can tell of a checkout, asked of a hardened git",
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


def cached_lines(tree: ast.Module) -> list[int]:
    """Lines that use ``functools.cache`` or ``lru_cache`` (as a decorator, a call or an import)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "functools":
            found += [node.lineno for a in node.names if a.name in CACHES]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "functools"
        ):
            found += [node.lineno] if node.attr in CACHES else []
    return sorted(set(found))


def module_state(tree: ast.Module) -> list[int]:
    """Lines of a module-level name bound to an empty container (a table filled later), and of every
    ``global`` statement (a module-level name rebound)."""
    empty = ("dict", "list", "set", "defaultdict", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary")
    found = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Global)]
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, (ast.Dict, ast.List, ast.Set)) and not getattr(
            value, "keys", getattr(value, "elts", [])
        ):
            found.append(node.lineno)
        elif isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
            name = value.func.id if isinstance(value.func, ast.Name) else value.func.attr
            found += [node.lineno] if name in empty and not value.args else []
    return sorted(set(found))


def declared_memos() -> list[str]:
    """The modules that declare a memo through memos (they import ``remember`` or ``Table``)."""
    return [
        relative
        for relative, _, tree in modules()
        if any(
            isinstance(node, ast.ImportFrom)
            and node.module == "runner.memos"
            and {a.name for a in node.names} & {"remember", "Table"}
            for node in ast.walk(tree)
        )
    ]


def test_memos_are_declared_only_through_resolved():
    found = [
        f"runner/{relative}:{line}"
        for relative, _, tree in modules()
        if relative != MEMO_MODULE and relative not in OWN_MEMOS
        for line in cached_lines(tree)
    ]
    assert found == []  # @remember(kind, why) or a memos.Table; or an object the command passes down


def test_no_module_keeps_a_table_of_its_own():
    found = [
        f"runner/{relative}:{line}"
        for relative, _, tree in modules()
        if relative not in MODULE_STATE
        for line in module_state(tree)
    ]
    assert found == []  # a memos.Table with why it cannot go stale, or an object passed down


def test_every_memo_is_registered_with_its_kind_and_why():
    declaring = declared_memos()
    for relative in declaring:
        importlib.import_module(
            "runner." + relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        )
    registered = memos.MEMOS.values()
    assert {m.name.rpartition(".")[0].removeprefix("runner.").replace(".", "/") for m in registered} >= {
        r.removesuffix(".py").removesuffix("/__init__") for r in declaring
    }
    assert all(m.kind in get_args(memos.Kind) and len(m.why) > 20 for m in registered), registered


def test_the_memo_and_state_lists_name_modules_that_still_need_them():
    for relative, _, tree in modules():
        if relative in OWN_MEMOS:
            assert cached_lines(tree), f"{relative} keeps no memo of its own now: drop it from OWN_MEMOS"
        if relative in MODULE_STATE:
            assert module_state(tree), f"{relative} keeps no module state now: drop it from MODULE_STATE"
    names = {relative for relative, _, _ in modules()}
    assert sorted({*OWN_MEMOS, *MODULE_STATE} - names) == []


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
    ]
    assert found == []  # @dataclass(frozen=True), or a "# mutable: why" line right above it


def test_the_scans_see_every_form():
    kept = """
from functools import cache, wraps
import functools
KEPT = {}
NAMES: list[str] = []
EMPTY = dict()
TABLE = {"a": 1}
CONSTANT = ("a",)
@functools.lru_cache(maxsize=2)
def f(): global KEPT
"""
    tree = ast.parse(kept)
    assert cached_lines(tree) == [2, 9]
    assert module_state(tree) == [4, 5, 6, 10]
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
