"""miles_parser against bad input: a PY that is no interpreter, one without miles' needs, a checkout
whose parser raises something else, hangs or ends the process. Each is exit 3 (an environment
error) or a problem of rule miles, within a bounded time; never a traceback.

These run run-matrix's own Python on a small hostile checkout (its own ``torch`` and
``miles.utils.arguments``); miles' real parser is tests/differential/test_against_miles.py's.
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from runner import miles_parser, pipeline
from runner.errors import EnvironmentProblem

pytestmark = pytest.mark.allow_subprocess
ROOT = Path(__file__).parents[1]
SPEC = ROOT / "matrices/qwen3-30b-a3b/baseline.yaml"
TORCH = "class cuda: pass\nclass version:\n    hip = None\n    cuda = '12.9'\n"


def checkout(tmp_path: Path, parse_args_body: str) -> Path:
    """A checkout whose parse_args() does ``parse_args_body`` (and a torch that only holds attributes)."""
    root = tmp_path / "miles"
    (root / "miles/utils").mkdir(parents=True)
    (root / "torch.py").write_text(TORCH)
    (root / "miles/__init__.py").write_text("")
    (root / "miles/utils/__init__.py").write_text("")
    body = textwrap.indent(textwrap.dedent(parse_args_body), "    ")
    (root / "miles/utils/arguments.py").write_text(f"def parse_args():\n{body}\n")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    tmp_path.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def cells() -> list[object]:
    return [pipeline.cell(SPEC)]


def test_a_python_that_is_no_file_is_an_environment_error(tmp_path: Path, cells: list[object]) -> None:
    with pytest.raises(EnvironmentProblem) as error:
        miles_parser.check(cells, tmp_path / "no-python", checkout(tmp_path, "pass"))  # type: ignore[arg-type]
    assert str(error.value).startswith(f"--miles-python {tmp_path / 'no-python'}: not an executable file\n")


def test_a_program_that_is_no_python_gives_no_verdict(tmp_path: Path, cells: list[object]) -> None:
    with pytest.raises(EnvironmentProblem, match="did not run miles' parser"):
        miles_parser.check(cells, Path("/bin/true"), checkout(tmp_path, "pass"))  # type: ignore[arg-type]


def test_a_python_without_miles_needs_says_what_it_lacks(tmp_path: Path, cells: list[object]) -> None:
    root = checkout(tmp_path, "pass")
    (root / "miles/utils/arguments.py").write_text("import sglang_router_that_is_missing\n")
    with pytest.raises(EnvironmentProblem) as error:
        miles_parser.check(cells, Path(sys.executable), root)  # type: ignore[arg-type]
    assert "cannot import the checkout's parser: ModuleNotFoundError: No module named" in str(error.value)


def test_a_parser_raising_something_else_is_a_miles_problem(tmp_path: Path, cells: list[object]) -> None:
    root = checkout(tmp_path, "raise RuntimeError('the --rollout-batch-size is odd')")
    (found,) = miles_parser.check(cells, Path(sys.executable), root).values()  # type: ignore[arg-type]
    assert [(p.rule, p.message, str(p.locations[0])) for p in found] == [
        (
            "miles",
            "miles refuses it: RuntimeError: the --rollout-batch-size is odd",
            "matrices/qwen3-30b-a3b/base/qwen3-30b-a3b.yaml:47",
        )
    ]


def test_a_parser_that_hangs_is_stopped_per_cell(
    tmp_path: Path, cells: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(miles_parser, "SECONDS_PER_CELL", 2)
    started = time.monotonic()
    (found,) = miles_parser.check(
        cells, Path(sys.executable), checkout(tmp_path, "while True: pass")
    ).values()  # type: ignore[arg-type]
    assert [p.message for p in found] == ["miles refuses it: hang: parse_args() still ran after 2 s"]
    assert time.monotonic() - started < 30


def test_a_parser_that_ends_the_process_leaves_no_verdict(tmp_path: Path, cells: list[object]) -> None:
    with pytest.raises(EnvironmentProblem, match="did not run miles' parser"):
        miles_parser.check(cells, Path(sys.executable), checkout(tmp_path, "import os; os._exit(0)"))  # type: ignore[arg-type]


def test_validate_with_a_python_that_is_no_file_exits_3(tmp_path: Path, cli: Any, in_repo: Path) -> None:
    root = checkout(tmp_path, "pass")
    result = cli("validate", str(SPEC), "--miles-root", str(root), "--miles-python", str(tmp_path / "py"))
    assert (result.code, result.out) == (3, "")
    assert f"--miles-python {tmp_path / 'py'}: not an executable file" in result.err
    assert "Traceback" not in result.err


def test_validate_with_a_python_but_no_checkout_is_a_usage_error(cli: Any, in_repo: Path) -> None:
    result = cli("validate", str(SPEC), "--miles-python", sys.executable)
    assert (result.code, result.out) == (2, "")
    assert (
        result.err
        == "run-matrix: --miles-python needs --miles-root (or $MILES_ROOT): the checkout whose parser it runs\n"
    )


HOSTILE = "\x1b[31mRED\x1b]0;TITLE\x07"


def test_a_checkout_that_raises_escape_codes_never_reaches_the_terminal_raw(
    tmp_path: Path, cli: Any, in_repo: Path
) -> None:
    root = checkout(tmp_path, "pass")
    (root / "miles/__init__.py").write_text(f"raise RuntimeError({HOSTILE!r})\n")
    result = cli("validate", str(SPEC), "--miles-root", str(root), "--miles-python", sys.executable)
    assert (result.code, result.out) == (3, "")
    assert result.err == (
        f"run-matrix: --miles-python {sys.executable} cannot import the checkout's parser: RuntimeError:"
        " \\x1b[31mRED\\x1b]0;TITLE\\x07\n"
        "  ==> give an interpreter whose packages hold miles' dependencies (tools/oracles/miles/build.sh"
        " builds one for miles main)\n"
    )
