from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from runner.results.outcome import CellResult, Check, RequirementResult, RunResult, Status
from runner.run.summary import print_summary
from runner.run.view import PlainView

UNMET = (
    RequirementResult(
        "indexer-topk-clamp",
        "git",
        False,
        False,
        "/m is not a git checkout, so fix/a cannot be checked",
        "the GLM-5 indexer top-k clamp, in flight with PR 1124",
    ),
    RequirementResult(
        "sparse-mla-gfx950",
        "git",
        False,
        False,
        "/m is not a git checkout, so fix/b cannot be checked",
        "sparse-MLA kernels retuned for gfx950, in flight with PR 1124",
    ),
)
REASON = "; ".join(r.describe() for r in UNMET)
SKIPPED = tuple(
    CellResult(cell, Status.SKIPPED, REASON, "", (), "", "", "", requirements=UNMET)
    for cell in ("rocm/glm5-async", "rocm/glm5-async[fp8_rollout=true]")
)
PASSED = CellResult(
    "nv/glm5-colocate",
    Status.PASSED,
    "",
    "",
    (),
    "",
    "",
    "",
    seconds=31.5,
    checks=(Check("train/ppo_kl", "value <= 1e-08 at step 0", True, "ok"),),
)


def _printed(console: Console, cells: tuple[CellResult, ...]) -> list[str]:
    view = PlainView(console)
    for cell in cells:
        view.finished(cell)
    print_summary(console, RunResult(cells, "2026-11-30T00:00:00+00:00", 0.2))
    return console.export_text().splitlines()


def test_in_a_log_two_skipped_cells_print_their_reasons_once_and_a_line_each():
    console = Console(record=True, width=80, force_terminal=False)
    lines = _printed(console, SKIPPED)
    assert lines == [
        "rocm/glm5-async: skipped",
        f"  - {UNMET[0].describe()}",
        f"  - {UNMET[1].describe()}",
        "rocm/glm5-async[fp8_rollout=true]: skipped — the same 2 reasons as rocm/glm5-async",
        "run-matrix: 2 skipped in 0 s: nothing ran, every selected cell was skipped (exit 5)",
        "skipped  0 s  rocm/glm5-async  requires.indexer-topk-clamp: /m is not… (+1 more)",
        "skipped  0 s  rocm/glm5-async[fp8_rollout=true]  requires.indexer-topk-cl… (+1 more)",
    ]
    # wrapped at 80 columns, as a CI log viewer shows it
    assert sum(-(-len(line) // 80) for line in lines) <= 17


def test_a_passed_cell_says_its_checks_held():
    console = Console(record=True, width=80)
    assert _printed(console, (PASSED,))[-1] == "passed  32 s  nv/glm5-colocate  1 check held"


def test_on_a_terminal_the_table_never_cuts_a_cell_id_and_cuts_reasons():
    console = Console(record=True, width=100, force_terminal=True)
    print_summary(console, RunResult(SKIPPED, "2026-11-30T00:00:00+00:00", 0.2))
    text = console.export_text()
    lines = text.splitlines()
    assert len(lines) == 7 and all(len(line) <= 100 for line in lines)
    assert (
        "│ rocm/glm5-async[fp8_rollout=true] │ skipped │ 0 s  │ 0        │ requires.indexer-topk-clamp:"
        in text
    )
    assert lines[-2].endswith("… │")


def test_a_narrow_terminal_gets_lines():
    console = Console(record=True, width=80, force_terminal=True)
    print_summary(console, RunResult(SKIPPED, "2026-11-30T00:00:00+00:00", 0.2))
    assert console.export_text().splitlines()[1].startswith("skipped  0 s  rocm/glm5-async  ")


def test_a_run_whose_every_cell_was_skipped_exits_5_unless_strict_and_an_empty_one_exits_0():
    skipped = RunResult(SKIPPED, "2026-11-30T00:00:00+00:00", 0.2)
    assert (skipped.exit_code, skipped.to_json()["ok"], skipped.to_json()["exit_code"]) == (5, False, 5)
    assert replace(skipped, strict=True).exit_code == 1  # --strict: a skip is a failure
    assert replace(skipped, cells=()).exit_code == 0  # an empty --cells list: a shard with nothing to run
    assert replace(skipped, cells=(*SKIPPED, PASSED)).exit_code == 0  # one ran
    assert replace(skipped, complete=False).exit_code == 0  # a report written while the run goes on
