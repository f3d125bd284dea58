"""The command line as a newcomer types it: options and positionals in any order, none dropped, a
wrong spec path answered with the spec meant, help texts in the words a user writes."""

from __future__ import annotations

import pytest

from runner.cli import parser
from tests.test_cli import ROOT


@pytest.mark.parametrize(
    "argv",
    [
        ("explain", "rocm/glm5-async", "--format", "json", "args.sglang.sglang-dp-size"),
        ("explain", "--format", "json", "rocm/glm5-async", "args.sglang.sglang-dp-size"),
        ("explain", "rocm/glm5-async", "args.sglang.sglang-dp-size", "--format", "json"),
    ],
)
def test_options_and_positionals_come_in_any_order(cli, in_repo, argv):
    result = cli(*argv)
    assert result.code == 0, result.err
    assert (
        result.out == cli("explain", "rocm/glm5-async", "args.sglang.sglang-dp-size", "--format", "json").out
    )


def test_a_subcommand_of_a_command_takes_its_options_anywhere_too(cli, in_repo):
    result = cli("flags", "show", "--format", "json", "sglang-dp-size")
    assert result.code == 0, result.err
    assert '"aliases": [\n        "sglang-data-parallel-size"' in result.out


def test_explain_a_key_with_the_layout_shows_both(cli, in_repo):
    lines = cli("explain", "rocm/glm5-async", "args.sglang.sglang-dp-size", "--layout").out.splitlines()
    assert lines[:4] == [
        "args.sglang.sglang-dp-size = 2",
        "  matrices/rocm/glm5-async.yaml:38  set 2",
        "      why: with DP-attention, DP=2 EP=2 split each 2-GPU engine; they do not multiply it",
        "rocm/glm5-async on mi355x",
    ]
    assert any(line.startswith("  node 0") or "GPU" in line for line in lines[4:])


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("rocm/glm5-asyn", "rocm/glm5-async"), ("rocn/glm5-async.yaml", "rocm/glm5-async")],
)
def test_a_wrong_spec_path_gets_the_spec_meant(cli, in_repo, typed, meant):
    result = cli("validate", typed)
    assert result.code == 2
    assert result.err == (
        f"run-matrix: no spec {typed!r}: looked in {typed}, matrices/{typed}, {ROOT}/matrices/{typed};"
        f" did you mean {meant!r}?\n"
    )


def test_a_spec_path_close_to_nothing_gets_no_guess(cli, in_repo):
    result = cli("validate", "zzzz")
    assert result.err == f"run-matrix: no spec 'zzzz': looked in zzzz, matrices/zzzz, {ROOT}/matrices/zzzz\n"


def _help(*words: str) -> str:
    top = parser(only=words[0])
    for action in top._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            found = action.choices[words[0]]
            for word in words[1:]:
                found = next(
                    a.choices[word] for a in found._actions if isinstance(getattr(a, "choices", None), dict)
                )
            return " ".join(found.format_help().split())
    raise AssertionError(words)


def test_help_writes_the_prepared_reference_as_a_spec_writes_it():
    text = _help("run")
    assert "$${prepared:FUNCTION} in the spec's YAML" in text
    assert "${prepared:FUNCTION}" in text.replace("$${", "${")


def test_flags_show_help_and_verdict_speak_of_the_option_not_a_spec(cli):
    assert "spec" not in _help("flags", "show")
    result = cli("flags", "show", "--miles-version", "31f1ca96", "--format", "json")
    assert result.code == 0, result.err
    assert '"why": "miles 31f1ca96, as --miles-version says (2026-08-21-31f1ca96.json)"' in result.out
    unknown = cli("flags", "show", "--miles-version", "zzz")
    assert unknown.code == 2
    assert unknown.err == (
        "--miles-version: error [F0] miles_version: --miles-version 'zzz' names no single shipped flag catalog\n"
        "  ==> use one of dc8b499b, 31f1ca96, or --miles-root DIR (a checkout)\n"
    )
    newest = cli("flags", "show", "--format", "json")
    assert (
        '"why": "the newest shipped catalog (2026-08-21-31f1ca96.json): no --miles-version given"'
        in newest.out
    )
