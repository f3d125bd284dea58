"""Our rules against miles' own parse_args() (miles main, .oracles/miles): every shipped spec of miles
main is accepted by it, a check miles adds refuses with miles' message at the flag's line, and a
corpus of invalid specs is refused by both — or the test says which side is stricter, and why.

Without the oracle these skip; RUN_MATRIX_ORACLES=required (.ci/run) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from runner import check, miles_parser, pipeline
from runner.cell import Cell
from runner.errors import SpecError

from . import miles_oracle

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]
ROOT = Path(__file__).parents[2]
QWEN3 = ROOT / "matrices/qwen3-30b-a3b"


@pytest.fixture(scope="module")
def main_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = miles_oracle.unavailable_reason()
    if reason is not None:
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    return miles_oracle.extract(tmp_path_factory.mktemp("miles-main"))


def said(cells: list[Cell], root: Path) -> dict[str, list[str]]:
    """miles' verdict per cell: the text of each of its problems (none: accepted)."""
    found = miles_parser.check(cells, miles_oracle.PYTHON, root)
    return {cell_id: [str(p) for p in problems if p.severity == "error"] for cell_id, problems in found.items()}


def spec(folder: Path, name: str, args: str, extends: str = "baseline.yaml") -> Path:
    """A spec over a shipped qwen3-30b-a3b test (miles main's, imported) with ``args`` (YAML under args:)."""
    if not (folder / "base").exists():
        shutil.copytree(QWEN3, folder, dirs_exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(f"extends: {extends}\nargs:\n" + textwrap.indent(textwrap.dedent(args).strip(), "  ") + "\n")
    return path


def test_every_shipped_spec_of_miles_main_is_accepted(main_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    broken: list[tuple[Path, SpecError]] = []
    cells = [
        cell
        for cell in pipeline.select(["matrices"], None, broken)
        if cell.spec.miles_version in (None, miles_oracle.MAIN)
    ]
    assert len(cells) >= 10  # the qwen3-30b-a3b tests imported from miles main, and nv/glm5-main-ci
    assert said(cells, main_root) == {cell.id: [] for cell in cells}


TOP_P = """
rollout:
  rollout-top-p: 0.9
"""


def with_top_p_check(root: Path, into: Path) -> Path:
    """miles main plus a check like open PR 2596's: --rollout-top-p below 1 needs a --rollout-top-k."""
    tree = into / "miles-top-p"
    shutil.copytree(root, tree, symlinks=True)
    arguments = tree / "miles/utils/arguments.py"
    text = arguments.read_text()
    head = "def miles_validate_args(args):\n"
    assert text.count(head) == 1
    added = (
        "    if args.rollout_top_p < 1.0 and args.rollout_top_k <= 0:\n"
        '        raise ValueError(f"--rollout-top-p {args.rollout_top_p} needs --rollout-top-k > 0")\n'
    )
    arguments.write_text(text.replace(head, head + added))
    return tree


def test_a_check_miles_adds_refuses_at_the_flags_line(main_root: Path, tmp_path: Path) -> None:
    cell = pipeline.cell(spec(tmp_path, "top-p", TOP_P))
    assert said([cell], main_root) == {cell.id: []}
    assert said([cell], with_top_p_check(main_root, tmp_path)) == {
        cell.id: [
            f"{tmp_path}/top-p.yaml:3: error [miles] args.rollout.rollout-top-p: miles refuses it: --rollout-top-p"
            " 0.9 needs --rollout-top-k > 0\n  ==> " + miles_parser.verdicts.HINT
        ]
    }
