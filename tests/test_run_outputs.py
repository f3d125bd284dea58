"""Reports are checked before any work and written whole: every failure names the option and the path."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from runner.errors import EnvironmentProblem
from runner.results import report
from runner.run.outputs import Outputs, make_log_dir
from tests.test_report import RUN


def test_every_unwritable_output_is_named_before_any_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("")
    with pytest.raises(EnvironmentProblem) as caught:
        Outputs.checked(Path("missing/junit.xml"), Path("a-folder"), Path("a-file/summary.md"))
    assert str(caught.value) == (
        "cannot write the reports:\n"
        "  --junit missing/junit.xml: the folder missing does not exist\n"
        "  --report a-folder: is a folder\n"
        "  $GITHUB_STEP_SUMMARY a-file/summary.md: the folder a-file is not a folder"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "a-folder"]  # nothing was left behind


def test_the_log_folder_is_made_or_the_reason_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_log_dir(Path("logs/run-1"))
    assert (tmp_path / "logs" / "run-1").is_dir() and list((tmp_path / "logs" / "run-1").iterdir()) == []
    Path("file").write_text("")
    with pytest.raises(EnvironmentProblem) as caught:
        make_log_dir(Path("file/logs"))
    assert str(caught.value) == "--log-dir file/logs: cannot create it: Not a directory"


def test_each_write_replaces_the_files_whole_and_keeps_the_earlier_summary(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    outputs = Outputs.checked(tmp_path / "junit.xml", tmp_path / "report.json", summary)
    partial = type(RUN)(RUN.cells[:1], RUN.started, 1.0, complete=False)
    outputs.write(partial)
    assert json.loads((tmp_path / "report.json").read_text())["complete"] is False
    outputs.write(RUN)
    outputs.write(RUN)
    assert summary.read_text() == "# earlier step\n" + report.markdown(RUN)  # once, not once per write
    assert (tmp_path / "junit.xml").read_text().startswith('<?xml version="1.0" encoding="utf-8"?>\n<testsuites')
    data = json.loads((tmp_path / "report.json").read_text())
    assert (data["exit_code"], data["complete"]) == (1, True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.json", "summary.md"]
    assert outputs.failed() == ""


def test_a_write_that_fails_keeps_going_and_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    outputs = Outputs.checked(Path("out/junit.xml"), Path("report.json"), None)
    outputs.write(type(RUN)(RUN.cells[:1], RUN.started, 1.0, complete=False))
    (tmp_path / "out").rename(tmp_path / "gone")  # the disk that held it went away
    outputs.write(RUN)
    assert json.loads((tmp_path / "report.json").read_text())["complete"] is True
    assert outputs.failed() == (
        "could not write the reports (the others were written):\n  --junit out/junit.xml: No such file or directory"
    )
    (tmp_path / "gone").rename(tmp_path / "out")
    outputs.write(RUN)  # it came back: the next write succeeds and the failure is forgotten
    assert outputs.failed() == ""
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["junit.xml"]  # no temp file left


def test_a_file_size_limit_fails_the_write_not_the_file(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("{}\n")
    outputs = Outputs.checked(None, target, None)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))  # Python ignores SIGXFSZ: writes fail with EFBIG
    try:
        outputs.write(RUN)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert target.read_text() == "{}\n"
    assert outputs.failed().endswith(f"--report {target}: File too large")
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_link_planted_where_a_cells_log_goes_is_refused_before_any_work(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "nv-glm5.ray-head.log").symlink_to(victim)
    with pytest.raises(EnvironmentProblem) as caught:
        make_log_dir(logs, ["nv-glm5"])
    assert str(caught.value) == f"{logs}/nv-glm5.ray-head.log is a link (to {victim}): run-matrix never writes through a link"
    make_log_dir(logs, ["other-cell"])  # a link of no cell's is not looked at


def test_a_report_path_that_is_a_link_is_refused_unless_force_replaces_the_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "junit.xml").symlink_to(victim)
    with pytest.raises(EnvironmentProblem) as caught:
        Outputs.checked(tmp_path / "junit.xml", None, None)
    assert "pass --force to replace the link itself (never what it points to)" in str(caught.value)
    assert Outputs.checked(tmp_path / "junit.xml", None, None, force=True).force


def test_what_the_reports_would_carry_of_a_secret_is_its_reference(tmp_path):
    from runner.redact import Redactor

    redact = Redactor.of({"CLUSTER_TOKEN": "http://127.0.0.1:8265"})  # a value the reports hold
    outputs = Outputs.checked(tmp_path / "junit.xml", tmp_path / "report.json", tmp_path / "summary.md", redact=redact)
    outputs.write(RUN)
    for name in ("junit.xml", "report.json", "summary.md"):
        assert "127.0.0.1:8265" not in (tmp_path / name).read_text()
    assert "${CLUSTER_TOKEN}" in (tmp_path / "report.json").read_text()
