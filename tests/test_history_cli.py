"""run-matrix history: the table, JSON, plots, selection, untrust/trust, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.results.history.location import parse
from runner.results.history.store import AttemptRecord, Identity, Store
from runner.results.outcome import Gate, Sample


def identity(cell: str) -> Identity:
    return Identity(cell, "m/x.yaml", "abc123", "h200", "", "0.1.0")


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with three runs of nv/a (the last failed its gate) and one of rocm/b; cwd is tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_MATRIX_HISTORY_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "160")
    path = tmp_path / "run-matrix-logs" / "history.sqlite"
    store = Store.open(parse(str(path), "--history", from_command_line=True))
    for value, status in ((1.0, "passed"), (1.1, "passed"), (3.0, "failed")):
        verdict = "fail" if status == "failed" else "pass"
        gate = Gate("m", -1, 1, value, 1.05, 0.9, 1.2, 2, verdict, True, "")
        series = {"m": [Sample("step", 0, 0.0), Sample("step", 1, value)], "n": [Sample("perf", 0, 5.0)]}
        record = AttemptRecord(identity("nv/a"), 1, "j", "succeeded", status, status == "passed", "", series, [gate])
        store.record(record)
    store.record(AttemptRecord(identity("rocm/b"), 1, "j", "succeeded", "passed", True, "", {"n": [Sample("perf", 0, 7.0)]}))
    store.close()
    return path


def runs(cli, *argv: str) -> list[dict]:
    result = cli("history", *argv, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)["cells"]


def test_without_a_name_every_cell_in_the_store_is_shown_with_its_first_gated_metric(cli, store_path):
    a, b = runs(cli)
    assert (a["id"], a["metric"], [r["value"] for r in a["runs"]]) == ("nv/a", "m", [1.0, 1.1, 3.0])
    assert [(r["verdict"], r["low"], r["high"], r["trusted"]) for r in a["runs"]][-1] == ("fail", 0.9, 1.2, False)
    assert (b["id"], b["metric"], [r["value"] for r in b["runs"]]) == ("rocm/b", "n", [7.0])


def test_a_metric_and_the_last_runs_and_a_glob(cli, store_path):
    (a,) = runs(cli, "nv/*", "--metric", "n", "--last", "2")
    assert [(r["value"], r["verdict"], r["at_step"]) for r in a["runs"]] == [(5.0, "", 0), (5.0, "", 0)]
    assert [c["id"] for c in runs(cli, "-k", "rocm/*")] == ["rocm/b"]


def test_the_table_and_the_terminal_plot(cli, store_path):
    result = cli("history", "nv/a", "--plot")
    assert result.code == 0, result.err
    assert result.out.startswith("nv/a: m, 3 runs\n")
    assert "nv/a: m over the last 3 runs" in result.out and "not trusted" in result.out
    assert "[0.9, 1.2]" in result.out
    assert "over the last" not in cli("history", "nv/a").out  # not a terminal: no plot unless asked


@pytest.mark.allow_subprocess  # matplotlib's first import on a machine lists its fonts (fc-list)
def test_png_and_html_for_ci_artifacts(cli, store_path, tmp_path):
    assert cli("history", "nv/a", "--png", "a.png").code == 0
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    assert cli("history", "--html", "all.html").code == 0
    page = (tmp_path / "all.html").read_text()
    assert page.count("<svg") == 2 and "<h2>nv/a: m</h2>" in page and "<td>fail</td>" in page
    both = cli("history", "--png", "x.png")
    assert (both.code, both.err) == (2, "run-matrix: --png draws one cell; 2 have runs: name one (or use --html)\n")


def test_untrust_and_trust_again_are_recorded(cli, store_path):
    first = runs(cli, "nv/a")[0]["runs"][0]["run"]
    result = cli("history", "untrust", first, "--reason", "ran on a node with a broken GPU")
    assert (result.code, result.out) == (0, f"run {first} (nv/a, passed) is untrusted: ran on a node with a broken GPU\n")
    assert runs(cli, "nv/a")[0]["runs"][0]["note"] == "untrusted: ran on a node with a broken GPU"
    again = cli("history", "trust", first, "--reason", "the GPU was fine")
    assert (again.code, again.out) == (0, f"run {first} (nv/a, passed) is trusted: the GPU was fine\n")
    assert runs(cli, "nv/a")[0]["runs"][0]["trusted"] is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["untrust", "abc"], "usage: run-matrix history untrust RUN_ID --reason TEXT"),
        (["untrust", "nope", "--reason", "x"], "no run 'nope' in the history store run-matrix-logs/history.sqlite"),
        (["nv/a", "--metric", "zz"], "--metric zz: nv/a never recorded it (recorded: m, n)"),
        (["-k", "gpu/*"], "-k 'gpu/*' matches none of the 2 cells in the store"),
        (["-k", "fp8 and rocm"], "-k 'fp8 and rocm' is an expression over axis values: name the specs it selects from"),
        (["--last", "0"], "--last 0: give a positive number of runs"),
        (["--history", "postgresql://u:pw@h/d"], "--history: the URL holds a password; keep it off the command line: set PGPASSWORD (or ~/.pgpass), or put the whole URL in $RUN_MATRIX_HISTORY_URL"),
        (["--history", "postgresql://u@h:port/d"], "--history: not a database URL (postgresql://USER@HOST[:PORT]/DATABASE)"),
        (["--history", "nowhere.sqlite"], "no history store at nowhere.sqlite: `run-matrix run` writes one (or give --history)"),
    ],
)
def test_mistakes_are_exit_2_with_the_reason(cli, store_path, argv, message):
    result = cli("history", *argv)
    assert (result.code, result.err) == (2, f"run-matrix: {message}\n")
