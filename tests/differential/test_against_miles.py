"""Our rules against miles' own parse_args() (miles main, .oracles/miles): every shipped spec of miles
main is accepted by it, a check miles adds refuses with miles' message at the flag's line, and a
corpus of invalid specs is refused by both — or the test says which side is stricter, and why.

Without the oracle these skip; RUN_MATRIX_ORACLES=required (.ci/run) makes that a failure.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runner import check, miles_parser, pipeline
from runner.cells.cell import Cell
from runner.errors import SpecError
from tests.differential import miles_oracle

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]
ROOT = Path(__file__).parents[2]
QWEN3 = ROOT / "matrices/qwen3-30b-a3b"
COMPONENTS = ROOT / "matrices/components"


def said(cells: list[Cell], root: Path) -> dict[str, list[str]]:
    """miles' verdict per cell: the text of each of its problems (none: accepted)."""
    found = miles_parser.check(cells, miles_oracle.PYTHON, root)
    return {
        cell_id: [str(p) for p in problems if p.severity == "error"] for cell_id, problems in found.items()
    }


def spec(folder: Path, name: str, args: str, extends: str = "baseline.yaml") -> Path:
    """A spec over a shipped qwen3-30b-a3b test (miles main's, imported) with ``args`` (YAML under args:):
    the family copied as ``folder/qwen3-30b-a3b/`` beside the components its AMD cells' overlays name,
    in a matrices root of its own (``folder/hardware/``)."""
    family = folder / QWEN3.name
    if not family.exists():
        (folder / "hardware").mkdir(exist_ok=True)  # a matrices root: the components lie inside it (G14)
        shutil.copytree(QWEN3, family)
        components = folder / "components"
        components.mkdir()
        for component in COMPONENTS.glob(f"{QWEN3.name}-*.yaml"):
            shutil.copy(component, components)
    path = family / f"{name}.yaml"
    path.write_text(
        f"extends: {extends}\nargs:\n" + textwrap.indent(textwrap.dedent(args).strip(), "  ") + "\n"
    )
    return path


def test_every_shipped_spec_of_miles_main_is_accepted(
    main_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    broken: list[tuple[Path, SpecError]] = []
    cells = [
        cell
        for cell in pipeline.select(["matrices"], None, broken)
        if cell.spec.miles_version in (None, miles_oracle.MAIN)
    ]
    assert len(cells) >= 10  # the qwen3-30b-a3b tests imported from miles main, and nv/glm5-main-ci
    assert said(cells, main_root) == {cell.id: [] for cell in cells}


# miles main tests beyond the shipped ones (tests/e2e/megatron/), imported now from the checkout
IMPORTED = (
    "test_qwen3_4B_ppo.py",
    "test_qwen3_4B_variable_gbs.py",
    "test_qwen3_4b_fully_async_eval.py",
    "test_qwen3_30B_A3B_p2p.py",
    "test_qwen3_4B_offload_disk.py",
)


def test_imported_miles_main_tests_are_accepted(main_root: Path, tmp_path: Path, cli: Any) -> None:
    for name in IMPORTED:
        test = main_root / "tests/e2e/megatron" / name
        written = cli(
            "import", str(test), "--miles-root", str(main_root), "-o", str(tmp_path / f"{test.stem}.yaml")
        )
        assert written.code == 0, written.err
    tmp_path.chmod(0o755)
    cells = pipeline.select([str(tmp_path)], None, [])
    assert len(cells) >= len(IMPORTED)
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
            f"{tmp_path}/qwen3-30b-a3b/top-p.yaml:4: error [miles] args.rollout.rollout-top-p: miles refuses it: --rollout-top-p"
            " 0.9 needs --rollout-top-k > 0\n  ==> " + miles_parser.verdicts.HINT
        ]
    }


# name -> (the spec's lines over baseline.yaml, the rules of ours that refuse it, a piece of miles' refusal
# or None where miles' parse_args() accepts it, and why the two differ where they do)
CORPUS: dict[str, tuple[str, set[str], str | None, str]] = {
    "advantage-estimator-unknown": (
        "args:\n  grpo:\n    advantage-estimator: foo",
        {"F3"},
        "invalid choice: 'foo'",
        "",
    ),
    "kl-loss-type-unknown": ("args:\n  grpo:\n    kl-loss-type: foo", {"F3"}, "invalid choice: 'foo'", ""),
    "lr-not-a-number": ("args:\n  optimizer:\n    lr: abc", {"F4"}, "invalid float value: 'abc'", ""),
    "cp-3-of-4": (
        "args:\n  perf:\n    context-parallel-size: 3",
        {"M1"},
        "is not divisible by total_model_size",
        "",
    ),
    "pp-3-of-4": (
        "args:\n  perf:\n    pipeline-model-parallel-size: 3",
        {"M1", "M2"},
        "is not divisible by total_model_size",
        "",
    ),
    "tp-3-of-4": (
        "args:\n  perf:\n    tensor-model-parallel-size: 3",
        {"M1", "M4", "M5"},
        "is not divisible by total_model_size",
        "",
    ),
    "ep-3-of-128-experts": (
        "args:\n  perf:\n    expert-model-parallel-size: 3",
        {"M2", "M3"},
        "Number of experts should be a multiple of expert model parallel_size.",
        "",
    ),
    "dynamic-batch-without-max-tokens": (
        "args:\n  perf:\n    max-tokens-per-gpu: !delete",
        {"L6"},
        "max_tokens_per_gpu must be set when use_dynamic_batch_size is set",
        "",
    ),
    "no-colocate-no-rollout-gpus": (
        "args:\n  misc:\n    colocate: !delete",
        {"L3"},
        "a bare assert at miles/",
        "",
    ),
    # ours stricter on purpose: refused later than parse_args(), after the GPUs were taken
    "async-with-colocate": (
        "launch:\n  script: train_async.py",
        {"L2"},
        None,
        "train_async.py's train() asserts it after parse_args()",
    ),
    "engine-tp-3-of-32-heads": (
        "args:\n  sglang:\n    rollout-num-gpus-per-engine: 3",
        {"S14"},
        None,
        "SGLang refuses it when the engine loads the model, not in miles' parser",
    ),
}


def test_the_invalid_corpus_is_refused_by_both_or_the_stricter_side_is_named(
    main_root: Path, tmp_path: Path
) -> None:
    cells: dict[str, Cell] = {}
    for name, (lines, _, _, _) in CORPUS.items():
        path = spec(tmp_path, name, "")
        path.write_text(f"extends: baseline.yaml\n{lines}\n")
        cells[name] = pipeline.cell(path)
    verdicts = said(list(cells.values()), main_root)
    for name, (_, ours, miles, why) in CORPUS.items():
        refused_by = {p.rule for p in check.run(cells[name]) if p.severity == "error"}
        assert refused_by == ours, name
        theirs = verdicts[cells[name].id]
        if miles is None:
            assert theirs == [], f"{name}: miles now refuses it too; drop the reason {why!r}"
        else:
            assert len(theirs) == 1 and miles in theirs[0], (name, theirs)
