from __future__ import annotations

import json
from pathlib import Path

from runner.errors import Location, Problem, merged
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
    assert text.out.rstrip().endswith("1 errors, 0 warnings")
    data = json.loads(cli("validate", "spec.yaml", "--format", "json").out)
    assert [(p["rule"], p["cells"]) for p in data["problems"]] == [("L3", ["spec", "spec[fp8_rollout=true]"])]
