from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from runner.results.outcome import CellResult, Sample, Status
from runner.run.view import LiveView, PlainView, for_console

CELL = "rocm/glm5-async[fp8_rollout=true]"
FOUND = [
    ("train/ppo_kl", Sample("step", 2, 0.0001)),
    ("train/grad_norm", Sample("step", 2, 1.5)),
    ("train/train_rollout_logprob_abs_diff", Sample("step", 2, 0.077)),
]
RESULT = CellResult(
    CELL, Status.FAILED, "timed out after 4 s; the job was stopped", "", (), "", "", "", seconds=4.2
)


def test_without_a_terminal_the_view_prints_lines():
    console = Console(record=True, width=60)
    view = for_console(console)
    assert isinstance(view, PlainView)
    view.started(CELL, ("train/ppo_kl", "train/train_rollout_logprob_abs_diff"))
    view.phase(CELL, "prepare: model (hf-download)")
    view.output(CELL, "Fetching files: 100%")  # only the cell's log file gets every line
    view.metrics(CELL, FOUND)
    view.finished(RESULT)
    view.close()
    assert console.export_text().splitlines() == [
        f"{CELL}: prepare: model (hf-download)",
        f"{CELL}: step 2: train/ppo_kl=0.0001, train/train_rollout_logprob_abs_diff=0.077",
        f"{CELL}: failed — timed out after 4 s; the job was stopped",
    ]


def test_on_a_terminal_a_live_board():
    console = Console(record=True, width=200, force_terminal=True)
    view = for_console(console)
    assert isinstance(view, LiveView)
    try:
        view.started(CELL, ("train/ppo_kl",))
        view.phase(CELL, "running: rocm-glm5-async-fp8_rollout-true-1a2b3c4d")
        view.output(CELL, "(MegatronTrainRayActor pid=1) [12:00:00] step 2: {...}")
        view.metrics(CELL, FOUND)
        board = Console(width=200, record=True)
        board.print(view)
        row = board.export_text().splitlines()[1]
        assert row.startswith(
            f"{CELL}  running: rocm-glm5-async-fp8_rollout-true-1a2b3c4d  0 s      2     train/ppo_kl=0.0001"
        )
        assert row.rstrip().endswith("(MegatronTrainRayActor pid=1) [12:00:00] step 2: {...}")
        view.finished(RESULT)
        board.print(view)
        assert board.export_text().splitlines()[1].startswith(f"{CELL}  failed  4 s")
    finally:
        view.close()


def test_a_narrow_board_never_cuts_a_cell_id():
    console = Console(record=True, width=60, force_terminal=True)
    view = for_console(console)
    assert isinstance(view, LiveView)
    try:
        view.started(CELL, ("train/ppo_kl",))
        view.output(CELL, "Fetching 12 files: 100%|██████████| 12/12 [00:03<00:00, 3.41it/s]")
        board = Console(width=60, record=True)
        board.print(view)
        row = board.export_text().splitlines()[1]
        assert row.startswith(f"{CELL}  starting") and len(row.rstrip()) <= 60
    finally:
        view.close()


HOSTILE = "\x1b[31mRED\x1b]0;TITLE\x07 [bold]x[/bold]"
SHOWN = "\\x1b[31mRED\\x1b]0;TITLE\\x07 [bold]x[/bold]"


def test_a_log_line_or_a_reason_with_escape_codes_reaches_the_terminal_escaped():
    hostile = replace(RESULT, reason=f"prepare step failed: {HOSTILE}")
    plain = Console(file=io.StringIO(), width=300, color_system=None)
    view = for_console(plain)
    view.phase(CELL, f"prepare: {HOSTILE}")
    view.finished(hostile)
    assert plain.file.getvalue().splitlines() == [  # type: ignore[attr-defined]
        f"{CELL}: prepare: {SHOWN}",
        f"{CELL}: failed — prepare step failed: {SHOWN}",
    ]
    live = LiveView(Console(file=io.StringIO(), width=300, force_terminal=True))
    try:
        live.started(CELL, ())
        live.output(CELL, HOSTILE)
        board = Console(file=io.StringIO(), width=300, force_terminal=True, color_system=None)
        board.print(live)
        (row,) = board.file.getvalue().splitlines()[1:]  # type: ignore[attr-defined]
        assert row.rstrip().endswith(f"  {SHOWN}")
        assert "\x1b" not in row and "\x07" not in row
    finally:
        live.close()
