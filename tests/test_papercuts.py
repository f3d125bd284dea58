"""The papercuts of issue 34: hostile inputs that ended in a traceback or said nothing."""

from __future__ import annotations

import os

DEEP = "[" * 200_000 + "]" * 200_000


def test_a_deep_json_cells_file_is_an_error_not_a_traceback(cli, in_repo, tmp_path):
    (tmp_path / "cells.json").write_text(DEEP)
    result = cli("run", "--cells", str(tmp_path / "cells.json"), "--dry-run")
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err == f"run-matrix: --cells {tmp_path}/cells.json: JSON nested too deeply\n"


def test_a_deep_json_shard_plan_is_an_error_not_a_traceback(cli, in_repo, tmp_path):
    (tmp_path / "plan.json").write_text(DEEP)
    result = cli("run", "--shard-of", str(tmp_path / "plan.json"), "0", "--dry-run")
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err == f"run-matrix: --shard-of {tmp_path}/plan.json: JSON nested too deeply\n"


def test_a_deep_json_in_the_state_folder_is_passed_over(cli, tmp_path, monkeypatch):
    runs = tmp_path / "state" / "runs"
    runs.mkdir(parents=True)
    (runs / "evil.json").write_text(DEEP)
    (runs / "evil.lock").touch()
    os.mkfifo(runs / "fifo.json")  # reading it would wait for a writer forever
    (runs / "fifo.lock").touch()
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path / "state"))
    result = cli("cleanup")
    assert result.code == 0 and "Traceback" not in result.err
    assert (runs / "evil.json").exists()  # not a record of run-matrix's: left as it is


def test_list_prints_a_cell_id_with_a_newline_escaped(cli, write):
    from tests.test_model import VALID

    write("hardware/.keep", "")
    write("spec.yaml", VALID + 'matrix:\n  axes:\n    note: ["x", "a\\nb", "c\\u001b[31m"]\n')
    result = cli("list", "spec.yaml")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert len(lines) == 4 and "\x1b" not in result.out
    assert [line.split()[0] for line in lines[1:]] == ["spec", "spec[note=a\\nb]", "spec[note=c\\x1b[31m]"]


def test_run_refuses_a_hand_written_spec_whose_steps_touch_the_system(cli, write):
    from tests.test_model import VALID

    write("hardware/.keep", "")
    steps = (
        "vars: {models: /root/models}\n"
        "prepare:\n"
        "  cron: {kind: write-file, path: /etc/cron.d/x, text: '* * * * * root sh /tmp/evil'}\n"
        "  sysrq: {kind: write-file, path: /proc/sysrq-trigger, text: b}\n"
        "  keys: {kind: remove, paths: [/root/.ssh/authorized_keys]}\n"
        "  home: {kind: remove, paths: [/home/me/project]}\n"
        "  stale: {kind: remove, paths: [/root/models/old_torch_dist]}\n"
        "  shm: {kind: mkdir, paths: [/dev/shm/x]}\n"
    )
    write("spec.yaml", VALID + steps)
    refused = cli("run", "spec.yaml", "--dry-run")
    assert refused.code == 2 and "Traceback" not in refused.err
    lines = [line for line in refused.err.splitlines() if "[system-step]" in line]
    assert lines == [
        "spec.yaml:9: error [system-step] prepare.cron: it writes /etc/cron.d/x, under /etc, which changes the"
        " machine rather than the test's data",
        "spec.yaml:10: error [system-step] prepare.sysrq: it writes /proc/sysrq-trigger, under /proc, which"
        " changes the machine rather than the test's data",
        "spec.yaml:11: error [system-step] prepare.keys: it removes /root/.ssh/authorized_keys, under"
        " /root/.ssh, which changes the machine rather than the test's data",
        "spec.yaml:12: error [system-step] prepare.home: it removes /home/me/project, which no step creates or"
        " downloads into and no data folder holds, which changes the machine rather than the test's data",
    ]
    allowed = cli("run", "spec.yaml", "--dry-run", "--no-preflight", "--allow-system-steps")
    assert allowed.code == 0, allowed.err
