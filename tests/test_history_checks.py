"""runner.results.history.checks: the floor the history readers stand on, which imports none of them."""

from __future__ import annotations

import ast
from pathlib import Path

import runner.results.history

PACKAGE = "runner.results.history"
FOLDER = Path(runner.results.history.__file__).parent


def _imports(path: Path) -> set[str]:
    """The runner.results.history modules ``path`` imports anywhere: at the top, in a function, or only for
    the type checker (a cycle of those is still two modules that must be read together)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PACKAGE}."):
            found.add((node.module or "").removeprefix(f"{PACKAGE}.").split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix(f"{PACKAGE}.").split(".")[0] for a in node.names if a.name.startswith(f"{PACKAGE}.")
            }
    return found - {path.stem}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (as the modules along it), or [] when there is none."""
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> list[str]:
        state[module] = "open"
        for other in sorted(graph.get(module, ())):
            if state.get(other) == "open":
                return [*trail[trail.index(other) :], other] if other in trail else [module, other]
            if other not in state and (found := visit(other, [*trail, other])):
                return found
        state[module] = "done"
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module, [module])):
            return found
    return []


def test_the_history_modules_import_each_other_one_way_only():
    graph = {path.stem: _imports(path) for path in FOLDER.glob("*.py") if path.stem != "__init__"}
    assert "reads" in graph["learn"] and "checks" in graph["reads"]  # the walk sees both kinds of import
    assert _cycle(graph) == []
    assert "reads" not in graph["checks"]


def test_the_cycle_finder_names_a_cycle():
    assert _cycle({"checks": {"reads"}, "reads": {"checks", "gates"}, "gates": set()}) == [
        "checks",
        "reads",
        "checks",
    ]
