"""The layers of ``runner/`` (docs/development.md): a package imports only packages of a lower layer.

The table is read from docs/development.md, where a person reads it too; ``shared/DESIGN.md``, when it is
beside the checkout, must agree with it (its layer table, or at least its top-level layout). Every ``import`` counts: at the top, in a
function, or only for the type checker (a circle of those is still two packages that must be read
together). ``schemas`` (beside ``runner``) is below them all and imports nothing of run-matrix's.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner

RUNNER = Path(runner.__file__).parent
ROOT = RUNNER.parent
DESIGN = ROOT.parent / "shared" / "DESIGN.md"
DEVELOPMENT = ROOT / "docs" / "development.md"  # the layer table
ROW = re.compile(r"^\| (\d+) \| `([a-z_]+)(/|\.py)` \| (.+) \|$")
MAX_TOP_LEVEL_MODULES = 10  # __init__, errors and a few that every stage uses (issue 50)


def layers(text: str) -> dict[str, int]:
    """``{name: layer}`` of the first layer table in ``text`` (a package ``x/`` or a module ``x.py``)."""
    found = {match[2]: int(match[1]) for line in text.splitlines() if (match := ROW.match(line))}
    assert found, "no layer table (| layer | package | what it holds |)"
    return found


def imported(path: Path) -> Iterator[tuple[str, int]]:
    """The ``runner.*`` modules ``path`` imports anywhere, each with its line."""
    relative = path.relative_to(ROOT).with_suffix("")
    package = ".".join(relative.parts[:-1])  # a module's package; for __init__.py, the package itself
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x: relative to the module's package
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                yield (f"{base}.{alias.name}" if base == "runner" else base), node.lineno


def owner(module: str, names: dict[str, int]) -> str | None:
    """The layer-table name ``runner.X...`` belongs to (``X``), or None for an import of outside code."""
    parts = module.split(".")
    if parts[0] != "runner" or len(parts) < 2:
        return "__init__" if parts == ["runner"] else None
    return parts[1] if parts[1] in names else "__init__"  # from runner import __version__


def arrows(names: dict[str, int]) -> Iterator[tuple[str, str, str]]:
    """(importer, imported, where) for every import between two names of the table."""
    for path in sorted(RUNNER.rglob("*.py")):
        relative = path.relative_to(RUNNER)
        source = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        for module, line in imported(path):
            target = owner(module, names)
            if target is not None and target != source:
                yield source, target, f"runner/{relative.as_posix()}:{line} imports {module}"


def upward(names: dict[str, int]) -> list[str]:
    return [
        f"{where} (layer {names[source]} {source} -> layer {names[target]} {target})"
        for source, target, where in arrows(names)
        if names[target] <= names[source]
    ]


def test_every_package_and_module_of_runner_is_in_the_layer_table():
    names = layers(DEVELOPMENT.read_text(encoding="utf-8"))
    present = {
        p.stem if p.is_file() else p.name
        for p in RUNNER.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").is_file()
    }
    assert sorted(present - set(names)) == []  # a new folder gets its line (and its layer) in docs/development.md
    assert sorted(set(names) - present) == []  # a line for a folder that is gone is stale


def test_runner_keeps_few_top_level_modules():
    modules = sorted(p.name for p in RUNNER.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


def test_no_import_runs_up_the_layers_or_across_one():
    assert upward(layers(DEVELOPMENT.read_text(encoding="utf-8"))) == []


def test_the_walk_sees_every_kind_of_import():
    names = layers(DEVELOPMENT.read_text(encoding="utf-8"))
    seen = {(source, target) for source, target, _ in arrows(names)}
    assert ("cli", "run") in seen  # inside a function: run's stack is imported only when asked
    assert ("run", "results") in seen  # only for the type checker: the history's recorder
    assert ("cells", "knowledge") in seen


def test_an_arrow_up_or_across_is_named_with_its_line():
    names = layers(DEVELOPMENT.read_text(encoding="utf-8"))
    turned = {**names, "spec": names["cli"] - 1}  # as if spec/ sat above cli/
    found = upward(turned)
    assert found and all(re.match(r"runner/\S+\.py:\d+ imports runner\.", f) for f in found)
    assert any(f.endswith(f"(layer {names['cells']} cells -> layer 0 spec)") for f in found)
    peers = {**names, "port": names["upgrade"]}  # upgrade/ borrows port/'s writing: peers may not
    assert any("upgrade -> layer 2 port" in f for f in upward(peers))


def test_schemas_imports_nothing_of_runner():
    found = [
        f"schemas/{path.name}:{line} imports {module}"
        for path in sorted((ROOT / "schemas").glob("*.py"))
        for module, line in imported(path)
        if module.split(".")[0] == "runner"
    ]
    assert found == []


def layout_block(text: str) -> list[str]:
    """The top-level names (``runner/``, ``README.md``) of the first code block under ``## Layout``."""
    section = text.split("\n## Layout", 1)[1] if "\n## Layout" in text else ""
    block = section.split("```", 2)[1] if section.count("```") >= 2 else ""
    return [line.split()[0] for line in block.splitlines() if line.strip() and not line.startswith(" ")]


def test_the_design_document_agrees_with_the_layout():
    """``shared/DESIGN.md`` is the team's document and may lag the code; what it says must still be true.

    Where it carries a layer table, that table is docs/development.md's; where it carries only the top-level
    layout, every entry it names is in the checkout.
    """
    if not DESIGN.is_file():
        if os.environ.get("RUN_MATRIX_UPSTREAM") == "required":
            pytest.fail(f"RUN_MATRIX_UPSTREAM=required but {DESIGN} is not there")
        pytest.skip(f"no shared design document {DESIGN}")
    text = DESIGN.read_text(encoding="utf-8")
    if any(ROW.match(line) for line in text.splitlines()):
        assert layers(text) == layers(DEVELOPMENT.read_text(encoding="utf-8"))
        return
    named = layout_block(text)
    assert named, f"{DESIGN} has neither a layer table nor a Layout block"
    assert [name for name in named if not (ROOT / name.rstrip("/")).exists()] == []


def test_the_layout_block_is_read_as_a_person_reads_it():
    text = "# d\n\n## Layout\n\n```\nrunner/   the code\n  spec/  nested\nREADME.md  it\n```\n"
    assert layout_block(text) == ["runner/", "README.md"]
    assert layout_block("# d\n## Layout\nno block\n") == []
