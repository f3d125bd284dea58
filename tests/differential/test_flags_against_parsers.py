"""The flag catalog against the real parsers: SGLang 0.5.10's and megatron-core 0.19.2's argparse.

Two questions, per program, on the sources installed in the oracle venvs (tools/oracles/*):
* does the static reader (runner/knowledge/flags) find every flag the real parser has — names,
  aliases, whether it takes a value, type, choices, nargs?
* do F1 (unknown), F3 (choices) and F4 (type, arity) judge a corpus of argv as the parser does?
miles' own parser needs miles and its imports, which no oracle venv has: its flags are covered by
tests/test_flags_upstream.py (every flag upstream launches) instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from runner.knowledge.flags.argparse_calls import calls, to_flags
from runner.knowledge.flags.catalog import Flag
from runner.knowledge.flags.dataclass_args import sglang_fields
from runner.knowledge.flags.static import Module, Scope
from runner.knowledge.flags.sync import Report, megatron_flags
from runner.knowledge.flags.values import judge

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]

ROOT = Path(__file__).parents[2]
DUMP = ROOT / "tools" / "oracles" / "flags_dump.py"
VENVS = {
    "sglang": (ROOT / ".oracles" / "sglang", "lib/python3.11/site-packages"),
    "megatron": (ROOT / ".oracles" / "megatron", "lib/python3.12/site-packages"),
}


# choices computed from another module's registry when the parser is built: the catalog leaves them
# unchecked (no false alarm; a wrong value reaches argparse)
UNREAD_CHOICES = {
    "reasoning-parser": "list(ReasoningParser.DetectorMap.keys())",
    "tool-call-parser": "list(FunctionCallParser.ToolCallParserEnum.keys())",
    "lora-target-modules": "SUPPORTED_LORA_TARGET_MODULES from sglang.srt.utils",
    "exit-signal": "the standard library's signal.Signals",
}
# flags Megatron adds only when an optional package imports (`if HAVE_KITCHEN:`); the oracle venv lacks
# it, the container may have it: the catalog keeps them (a missing error, never a false alarm)
CONDITIONAL = {"kitchen-config-file", "kitchen-recipe-number"}


def venv(program: str) -> tuple[Path, Path]:
    folder, site = VENVS[program]
    python = folder / "bin" / "python"
    if not python.is_file():
        reason = f"{program} oracle venv not built: no {python} (run tools/oracles/{program}/build.sh)"
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    return python, folder / site


def real(program: str, cases: list[list[str]]) -> dict[str, Any]:
    python, _ = venv(program)
    done = subprocess.run(
        [str(python), "-W", "ignore", str(DUMP), program],
        input=json.dumps(cases), capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def ours(program: str) -> list[Flag]:
    _, site = venv(program)
    if program == "megatron":
        report = Report()
        found = list(megatron_flags(site, report))
        assert report.unreadable == []
        return found
    module = Module.parse(site / "sglang/srt/server_args.py", site)
    scope = Scope([module])
    function = module.function("ServerArgs.add_cli_args")
    assert function is not None
    raw = [*sglang_fields(scope, "ServerArgs"), *calls(scope, function, module.label)]
    assert [r for r in raw if isinstance(r, str)] == []
    return [f for r in raw if not isinstance(r, str) for f in to_flags(r, "sglang")]


@pytest.fixture(scope="module", params=["sglang", "megatron"])
def program(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def both(program: str) -> tuple[list[Flag], list[dict[str, Any]]]:
    return ours(program), real(program, [])["actions"]


def by_option(flags: list[Flag]) -> dict[str, Flag]:
    return {name: flag for flag in flags for name in (flag.name, *flag.aliases)}


def test_every_flag_of_the_real_parser_is_in_the_catalog_and_no_other(both) -> None:
    flags, actions = both
    real_names = {o.lstrip("-") for a in actions for o in a["options"]}
    assert len(real_names) > 300
    assert sorted(real_names - by_option(flags).keys()) == []
    assert sorted(by_option(flags).keys() - real_names - CONDITIONAL) == []


def test_each_flag_takes_a_value_or_not_as_the_parser_says(both) -> None:
    flags, actions = both
    index = by_option(flags)
    wrong = [
        a["options"][0]
        for a in actions
        if index[a["options"][0].lstrip("-")].kind != "other"
        and (index[a["options"][0].lstrip("-")].kind == "value") != a["takes_value"]
    ]
    assert wrong == []


def test_choices_nargs_and_types_agree(both) -> None:
    flags, actions = both
    index = by_option(flags)
    differences = []
    for a in actions:
        flag = index[a["options"][0].lstrip("-")]
        if flag.kind != "value":
            continue
        if flag.choices is not None and a["choices"] is not None and set(flag.choices) != set(a["choices"]):
            differences.append(f"{a['options'][0]} choices {flag.choices} vs {a['choices']}")
        if flag.choices is None and a["choices"] is not None and flag.name not in UNREAD_CHOICES:
            differences.append(f"{a['options'][0]}: the parser has choices the catalog lacks: {a['choices']}")
        if flag.nargs != a["nargs"]:
            differences.append(f"{a['options'][0]} nargs {flag.nargs!r} vs {a['nargs']!r}")
        if flag.type in ("int", "float") and a["type"] != flag.type:
            differences.append(f"{a['options'][0]} type {flag.type} vs {a['type']}")
    assert differences == []


def corpus(flags: list[Flag]) -> list[tuple[str, list[str]]]:
    """For each flag: a good value and a bad one of each kind the rules judge, and a misspelling."""
    cases: list[tuple[str, list[str]]] = []
    for flag in (f for f in flags if f.name not in CONDITIONAL):
        if flag.kind == "switch":
            cases += [(flag.name, []), (flag.name, ["yes"])]
        elif flag.kind == "value" and flag.nargs in (None, "+"):
            if flag.choices:
                cases += [(flag.name, [str(flag.choices[0])]), (flag.name, [str(flag.choices[0]) + "x"])]
            elif flag.type == "int":
                cases += [(flag.name, ["8"]), (flag.name, ["eight"]), (flag.name, ["1.5"])]
            elif flag.type == "float":
                cases += [(flag.name, ["0.5"]), (flag.name, ["half"])]
            cases.append((flag.name, []))  # a value flag written as a switch
        cases.append((flag.name[:-1] + "q", ["1"]))  # a misspelling
    return cases


def test_f1_f3_f4_judge_as_the_parser_does(program: str, both) -> None:
    flags, _ = both
    index = by_option(flags)
    cases = corpus(flags)
    required = ["--model-path", "m"] if program == "sglang" else []
    verdicts = real(program, [[*required, f"--{name}", *values] for name, values in cases])["verdicts"]
    disagreements = []
    for (name, values), theirs in zip(cases, verdicts, strict=True):
        flag = index.get(name)
        value: Any = True if not values else values[0] if len(values) == 1 else values
        mine = "F1" if flag is None else (judge(flag, value) or (None,))[0]
        if (mine is None) != (theirs is None):
            disagreements.append(f"--{name} {' '.join(values)}: ours {mine}, argparse {theirs}")
    assert len(cases) > 1000
    assert disagreements == []
