from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from runner.errors import Location, Problem, clipped, counted, merged, printable
from runner.spec.locate import BUNDLED_MATRICES

ROCM = BUNDLED_MATRICES / "rocm" / "glm5-async.yaml"


def test_the_same_problem_in_several_cells_is_one_problem():
    a = Problem("L3", "too many GPUs", "args.x", (Location(Path("s.yaml"), 4),))
    b = Problem("M3", "EP", "args.y", (Location(Path("s.yaml"), 5),))
    found = merged([("s", a), ("s[x=1]", a), ("s[x=1]", b), ("s[x=2]", a)])
    assert found == [
        Problem(
            "L3", "too many GPUs", "args.x", (Location(Path("s.yaml"), 4),), cells=("s", "s[x=1]", "s[x=2]")
        ),
        Problem("M3", "EP", "args.y", (Location(Path("s.yaml"), 5),), cells=("s[x=1]",)),
    ]
    assert str(found[0]) == (
        "s.yaml:4: error [L3] args.x: too many GPUs\n  ==> in 3 cells: s, s[x=1], s[x=2]"
    )
    assert str(found[1]) == "s.yaml:5: error [M3] args.y: EP"
    assert found[1].to_json()["cells"] == ["s[x=1]"]


def test_places_print_newest_first_with_their_keys_and_the_extends_chain():
    places = tuple(Location(Path("b.yaml"), line, key=f"k{line}") for line in range(1, 7))
    problem = Problem(
        "X1", "m", "k0", (Location(Path("o.yaml"), 9), *places), via=(Location(Path("o.yaml"), 1),)
    )
    assert str(problem) == (
        "o.yaml:9: error [X1] k0: m\n"
        "  ==> also at b.yaml:1 (k1)\n"
        "  ==> also at b.yaml:2 (k2)\n"
        "  ==> also at b.yaml:3 (k3)\n"
        "  ==> also at b.yaml:4 (k4)\n"
        "  ==> and 2 more: k5, k6\n"
        "  ==> reached through o.yaml:1"
    )
    assert problem.to_json()["via"] == [{"file": "o.yaml", "line": 1}]
    assert problem.to_json()["locations"][1] == {"file": "b.yaml", "line": 1, "key": "k1"}


def test_validate_prints_a_problem_of_every_cell_once(write, cli):
    write("spec.yaml", f"extends: {ROCM}\nargs:\n  sglang:\n    rollout-num-gpus: 6\n")
    text = cli("validate", "spec.yaml")
    assert text.code == 2
    assert text.out.count("[L3]") == 1
    assert text.out.splitlines()[0].startswith(
        "spec.yaml:4: error [L3] args.sglang.rollout-num-gpus: needs actor 4"
    )
    assert "  ==> in 2 cells: spec, spec[fp8_rollout=true]" in text.out
    assert text.out.rstrip().endswith("1 error, 0 warnings")
    data = json.loads(cli("validate", "spec.yaml", "--format", "json").out)
    assert [(p["rule"], p["cells"]) for p in data["problems"]] == [("L3", ["spec", "spec[fp8_rollout=true]"])]


DANGLING = re.compile(r"(?:'s|\b(?:the|a|an|of|to|and|or|with|by|for|its|their))\s*$")


def _ending(node: ast.expr) -> str | None:
    """The literal text a message template ends with (None: it ends with a value)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[-1], ast.Constant):
        return str(node.values[-1].value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _ending(node.right)
    return None


def _message(call: ast.Call) -> ast.expr | None:
    """The message of a ``Problem(rule, message, ...)`` or an ``...Error(message)``."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name == "Problem" and len(call.args) > 1:
        return call.args[1]
    return call.args[0] if name.endswith(("Error", "Problem")) and call.args else None


def test_no_message_template_ends_mid_sentence():
    """A message that ends "rendering the checkout's" leaves its reader to guess the rest."""
    cut = []
    for path in sorted((Path(__file__).parents[1] / "runner").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            message = _message(node) if isinstance(node, ast.Call) else None
            text = _ending(message) if message is not None else None
            if text and DANGLING.search(text):
                cut.append(f"{path.name}:{node.lineno}: ...{text[-40:]}")
    assert cut == []


def test_a_clipped_text_ends_at_a_word_and_says_it_was_cut():
    said = "the sandbox's driver left no answer because the checkout's helper raised an error"
    assert clipped(said, 200) == said
    assert clipped(said, 40) == "the sandbox's driver left no answer…"
    assert len(clipped(said, 40)) <= 40
    assert clipped("x" * 50, 10) == "x" * 9 + "…"  # one long word: cut inside it, still marked


def test_a_count_says_its_noun_in_the_singular_only_for_one():
    assert [counted(n, "cell") for n in (0, 1, 2)] == ["0 cells", "1 cell", "2 cells"]
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"


def test_no_message_counts_with_an_s_in_parentheses():
    """ "1 node(s)": a count says its noun in the number it has (``counted``), everywhere."""
    found = []
    for path in sorted((Path(__file__).parents[1] / "runner").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.search(r"\w\(s\)", node.value)
            ):
                found.append(f"{path.name}:{node.lineno}: {node.value.strip()[:60]}")
    assert found == []


def test_printable_shows_escape_codes_escaped_and_keeps_lines_only_when_asked():
    hostile = "\x1b[31mRED\x1b]0;TITLE\x07\r\u202eevil\x9b2J\n\tnext [bold]x[/bold]"
    assert (
        printable(hostile) == "\\x1b[31mRED\\x1b]0;TITLE\\x07\\r\\u202eevil\\x9b2J\\n\\tnext [bold]x[/bold]"
    )
    assert printable(hostile, lines=True) == (
        "\\x1b[31mRED\\x1b]0;TITLE\\x07\\r\\u202eevil\\x9b2J\n\tnext [bold]x[/bold]"
    )
    assert printable(hostile, markup=True).endswith("next \\[bold]x\\[/bold]")
    assert printable("naïve café: 3 cells ✓") == "naïve café: 3 cells ✓"


@given(st.text())
def test_printable_leaves_nothing_a_terminal_acts_on_and_escaping_twice_is_once(text):
    for lines in (False, True):
        shown = printable(text, lines=lines)
        assert all(c.isprintable() or (lines and c in "\n\t") for c in shown)
        assert printable(shown, lines=lines) == shown
    assert printable(text) == text if text.isprintable() else printable(text) != text
