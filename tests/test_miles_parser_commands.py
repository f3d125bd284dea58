"""``--miles-python`` on list, coverage and import: the checkout's own parse_args() (runner.miles_parser,
validate's check) says which cells it accepts, and an import is confirmed after writing.

list and coverage run on the fake miles of tests/test_run_miles_check.py (a parser of the catalog's
flags that refuses when the spec's env: sets ``FAKE_MILES_PARSER_REFUSES``); import on fake-miles with
main-layout (tests/test_importer_suite.py's tiny family) and a parser written here that refuses a
``--max-tokens-per-gpu`` above a limit. The interpreter is run-matrix's own Python.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner import miles_parser
from runner.errors import Problem
from tests.conftest import DATA
from tests.test_run_miles_check import MATRICES, REFUSAL, spec  # noqa: F401  (spec: a fixture)

pytestmark = pytest.mark.allow_subprocess
PY = sys.executable
MILES_SAYS = f"miles refuses it: train_async.py: error: {REFUSAL}"
FAMILY = "tests/e2e/tiny_family"
LIMIT = """import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--{flag}", type=int)
    args, _ = parser.parse_known_args()
    if getattr(args, "{flag}".replace("-", "_")) > {limit}:
        parser.error("argument --{flag}: at most {limit} here")
    return args
"""


def limit(value: int, flag: str = "max-tokens-per-gpu") -> str:
    """A parser that refuses ``--flag`` above ``value``, as argparse's ``parser.error`` does."""
    return LIMIT.format(flag=flag, limit=value)


@pytest.fixture
def two(spec: Callable[[str], Path], tmp_path: Path) -> Path:  # noqa: F811
    """m/fake/async.yaml, which miles refuses, and m/fake/ok.yaml beside it, which it accepts."""
    refused = spec(f"env: {{FAKE_MILES_PARSER_REFUSES: '{REFUSAL}'}}")
    text = refused.read_text().replace(f"env: {{FAKE_MILES_PARSER_REFUSES: '{REFUSAL}'}}", "")
    (refused.parent / "ok.yaml").write_text(text)
    return refused.parent


def test_list_says_which_cells_miles_accepts(cli, two):
    result = cli("list", "m/fake", "--miles-python", PY)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split()[-2:] == ["MILES", "STATUS"]
    assert [line.split()[0] for line in lines[1:]] == ["async", "ok"]
    assert [line.split()[-2] for line in lines[1:]] == ["refuses", "accepts"]
    assert result.err == (
        f"{MATRICES}/base/glm5-744b-a40b-4layer.yaml:76: error [miles] args.rollout.num-rollout: {MILES_SAYS}\n"
        "  ==> miles' own parse_args() refuses this launch: change the flag it names (the message is miles')\n"
    )


def test_list_as_json_gives_the_verdict_and_miles_problem(cli, two):
    result = cli("list", "m/fake", "--miles-python", PY, "--format", "json")
    rows = {row["id"]: row for row in json.loads(result.out)["cells"]}
    assert (rows["async"]["miles"], rows["ok"]["miles"]) == ("refuses", "accepts")
    (said,) = rows["async"]["miles_problems"]
    assert (said["rule"], said["message"], said["key"]) == ("miles", MILES_SAYS, "args.rollout.num-rollout")
    assert rows["ok"]["miles_problems"] == []


def test_list_without_miles_python_has_no_miles_column(cli, two):
    result = cli("list", "m/fake")
    assert (result.code, "MILES" in result.out, result.err) == (0, False, "")


def test_coverage_marks_each_cell_with_miles_verdict(cli, two):
    result = cli("coverage", "m/fake", "--miles-python", PY)
    assert result.code == 0, result.err
    assert "async (miles: refuses), ok (miles: accepts)" in result.out
    assert MILES_SAYS in result.err
    shown = json.loads(cli("coverage", "m/fake", "--miles-python", PY, "--format", "json").out)
    (entry,) = [e for row in shown["tests"] for e in row["hardware"].values() if e["cells"]]
    assert entry["miles"] == {"async": "refuses", "ok": "accepts"}


@pytest.mark.parametrize("command", ["list", "coverage"])
def test_a_missing_interpreter_is_an_environment_error(cli, two, tmp_path, command):
    result = cli(command, "m/fake", "--miles-python", str(tmp_path / "py"))
    assert (result.code, result.out) == (3, "")
    assert f"--miles-python {tmp_path / 'py'}: not an executable file\n" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("command", ["list", "coverage"])
def test_miles_python_without_a_checkout_is_a_usage_error(cli, two, monkeypatch, command):
    monkeypatch.delenv("MILES_ROOT")
    result = cli(command, "m/fake", "--miles-python", PY)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("run-matrix: --miles-python needs --miles-root (or $MILES_ROOT)")


def test_a_verdict_in_a_word():
    waits = Problem(
        "miles", "not checked with miles' parser: '${X}' is decided at launch", severity="warning"
    )
    refused = Problem("miles", "miles refuses it: ...")
    found = [miles_parser.verdict(problems) for problems in ([], [waits], [waits, refused])]
    assert found == ["accepts", "unchecked", "refuses"]


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """fake-miles with main-layout, whose parser is ``arguments`` (formatted with the limit)."""
    tmp_path.chmod(0o755)  # read in the sandbox as the unprivileged user nobody
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    shutil.copytree(DATA / "main-layout", root, dirs_exist_ok=True)

    def parser(arguments: str) -> Path:
        (root / "miles/utils/arguments.py").write_text(arguments)
        for path in [root, *root.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return root

    return parser


def imported(cli: Callable[..., Any], root: Path, test: str, *more: str) -> Any:
    return cli("import", str(root / FAMILY / test), "--miles-root", str(root), "--miles-python", PY, *more)


def test_import_names_the_tests_line_and_miles_message(cli, checkout, tmp_path):
    root = checkout(limit(2048))
    result = imported(cli, root, "test_nv_case.py", "-o", "nv.yaml")
    assert result.code == 2
    assert result.out.startswith("wrote nv.yaml\n")  # written as the test launches it
    assert (tmp_path / "nv.yaml").is_file()
    assert result.err.endswith(
        f"miles/{FAMILY}/test_nv_case.py:19: error [miles] args.perf.max-tokens-per-gpu: the launch of cell nv"
        " is written, but miles refuses it: train.py: error: argument --max-tokens-per-gpu: at most 2048 here\n"
        "  ==> also at nv.yaml:50\n"
        "  ==> written as the test launches it; miles' own parse_args() refuses that launch at this checkout:"
        " change the flag it names in the test (then import again) or in the spec\n"
        "run-matrix: miles' parser refuses 1 written launch(es)\n"
    )


def test_import_of_a_launch_miles_accepts_is_quiet(cli, checkout):
    root = checkout(limit(8192))
    result = imported(cli, root, "test_nv_case.py", "-o", "nv.yaml", "--format", "json")
    assert result.code == 0, result.err
    assert (json.loads(result.out)["miles"], "[miles]" in result.err) == ([], False)


def test_a_folder_import_names_each_refused_test_in_the_summary(cli, checkout, tmp_path):
    root = checkout(limit(4, "tensor-model-parallel-size"))  # the wide case's TP is 8
    argv = ("import", str(root / FAMILY), "-o", "tiny", "--miles-root", str(root), "--miles-python", PY)
    result = cli(*argv, "-j", "1")
    assert result.code == 4  # specs written, one of them refused by miles' parser
    refused = [line for line in result.err.splitlines() if "error [miles]" in line]
    assert refused == [
        f"miles/{FAMILY}/test_wide_case.py:13: error [miles] args.perf.tensor-model-parallel-size: the launch"
        " of cell wide_case is written, but miles refuses it: train.py: error: argument"
        " --tensor-model-parallel-size: at most 4 here"
    ]
    assert "│ imported                                      │     2 │" in result.out
    assert "│ written, but miles' parser refuses its launch │     1 │" in result.out
    assert (tmp_path / "tiny/wide_case.yaml").is_file()
    tests = json.loads(cli(*argv, "-j", "1", "--force", "--format", "json").out)["tests"]
    assert {name: t["outcome"] for name, t in tests.items()} == {
        "test_amd_nv_case.py": "imported",
        "test_nv_case.py": "imported",
        "test_wide_case.py": "miles refuses",
    }
    assert tests["test_wide_case.py"]["why"] == refused[0]


def test_import_with_a_missing_interpreter_writes_nothing(cli, checkout, tmp_path):
    root = checkout(limit(2048))
    result = cli(
        "import",
        str(root / FAMILY / "test_nv_case.py"),
        "-o",
        "nv.yaml",
        "--miles-root",
        str(root),
        "--miles-python",
        str(tmp_path / "py"),
    )
    assert (result.code, result.out, (tmp_path / "nv.yaml").exists()) == (3, "", False)
    assert f"--miles-python {tmp_path / 'py'}: not an executable file\n" in result.err


def test_import_with_a_parser_that_crashes_says_so(cli, checkout):
    root = checkout("def parse_args():\n    raise RuntimeError('the --max-tokens-per-gpu table is gone')\n")
    result = imported(cli, root, "test_nv_case.py", "-o", "nv.yaml")
    assert result.code == 2
    assert (
        f"{FAMILY}/test_nv_case.py:19: error [miles] args.perf.max-tokens-per-gpu: the launch of cell nv is"
        " written, but miles refuses it: RuntimeError: the --max-tokens-per-gpu table is gone\n"
    ) in result.err


def test_import_with_a_parser_that_cannot_be_imported_is_an_environment_error(cli, checkout):
    root = checkout("import a_module_miles_needs_but_py_lacks\n")
    result = imported(cli, root, "test_nv_case.py", "-o", "nv.yaml")
    assert result.code == 3
    assert "cannot import the checkout's parser: ModuleNotFoundError: No module named" in result.err
    assert "Traceback" not in result.err


def test_import_with_a_parser_that_hangs_is_stopped(cli, checkout, monkeypatch):
    monkeypatch.setattr(miles_parser, "SECONDS_PER_CELL", 2)
    root = checkout("def parse_args():\n    while True:\n        pass\n")
    started = time.monotonic()
    result = imported(cli, root, "test_nv_case.py", "-o", "nv.yaml")
    assert result.code == 2
    assert (
        "the launch of cell nv is written, but miles refuses it: hang: parse_args() still ran after 2 s\n"
        in (result.err)
    )
    assert time.monotonic() - started < 60


def test_import_names_the_miles_python_it_needs_a_checkout_for(cli, checkout, monkeypatch):
    root = checkout(limit(2048))
    monkeypatch.delenv("MILES_ROOT", raising=False)
    result = cli("import", str(root / FAMILY / "test_nv_case.py"), "-o", "nv.yaml", "--miles-python", PY)
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith("run-matrix: --miles-python needs --miles-root (or $MILES_ROOT)")
