"""run-matrix report --html: the site from specs and a history store (SQLite and PostgreSQL), an
empty store, --since, hostile names, and the hook for bisections."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest

from runner.results.site import records
from runner.results.site.build import Options, site
from runner.results.site.pages import cell_file
from tools.report_html_example import build, insert, rows, write_specs


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, history_url: str) -> tuple[Path, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_MATRIX_HISTORY_URL", raising=False)
    specs = tmp_path / "matrices"
    write_specs(specs)
    from runner import pipeline

    cells = [(c.id, c.profile.name) for c in pipeline.select([str(specs)]) if not c.skip]
    insert(history_url, rows(cells, 14))
    return specs, history_url


def pages(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*.html"))}


def text(page: str) -> str:
    """What a person reads of a page: its text, tags and surplus white space left out."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)).replace("&amp;", "&")


def test_the_site_of_the_example_store(cli, example, tmp_path):
    specs, url = example
    result = cli("report", str(specs), "--history", url, "--html", "site", "--budget-gpu-hours", "100")
    assert (result.code, result.out) == (0, "site/index.html\n"), result.err
    assert result.err == "run-matrix: wrote 8 pages (56 runs) to site\n"
    found = pages(tmp_path / "site")
    assert sorted(found) == [
        "budget.html",
        *sorted(cell_file(c) for c in ("nv/dense", "nv/moe", "rocm/dense", "rocm/moe", "rocm/moe[fp8=true]")),
        "flaky.html",
        "index.html",
    ]
    index = text(found["index.html"])
    assert "5 cells; failing now: nv/moe , rocm/dense ; flaky: nv/moe ( streaks )" in index
    assert "amd 2 of 3 67%" in index and "nvidia 2 of 3 67%" in index and "mi355x 2 of 3 67%" in index
    # the tests whose newest runs pass on one platform and fail on the other come first
    assert index.index("dense passes on one platform, fails on another") < index.index("moe [fp8=true]")
    assert "rocm/dense failed (gate failure)" in index and "nv/dense passed" in index
    assert (
        "rocm/moe[fp8=true] mi355x FP8 rollout kernels missing on gfx950 https://github.com/radixark/miles/issues/1 2999-01-01"
        in index
    )
    flaky = text(found["flaky.html"])
    assert (
        "nv/moe failed (gate failure) 1 run since 2026-11-29" in flaky
        and "7 flips in the last 10 runs 78% flaky" in flaky
    )
    assert (
        "rocm/dense failed (gate failure) 3 runs since 2026-11-27" in flaky
        and "3 gate failures, 1 infra failure" in flaky
    )
    assert "at least 3 of its last 10 runs" in flaky
    page = found[cell_file("rocm/dense")]
    assert page.count("<svg") == 1 and 'class="band"' in page and 'class="bound"' in page and "max 3" in page
    assert (
        "r000055 2026-11-29 02:55 failed (gate failure) no (failed) 31f1ca96b0c5 2160 s miles-31f1ca96"
        in text(page)
    )
    assert "error (infra failure)" in text(page)
    assert "ray job submit" in page and "--colocate" in page  # the rendered launch
    assert (
        "Diff against nv/dense" in text(page)
        and '<span class="del">-  --env HIP_FORCE_DEV_KERNARG' not in page
    )
    assert re.search(r'<span class="(add|del)">[-+].*HIP_FORCE_DEV_KERNARG', page)
    budget = text(found["budget.html"])
    assert "budget: 100 GPU-hours a week" in budget and "2026-W48 123.20 over budget" in budget
    assert "stage-c-8-gpu-mi355x mi355x" in budget
    said = json.loads(cli("report", str(specs), "--history", url, "--html", "site", "--format", "json").out)
    assert (said["index"], said["runs"], said["flaky"]) == ("site/index.html", 56, ["nv/moe"])
    assert said["failing"] == [
        {"cell": "nv/moe", "failed_in_a_row": 1},
        {"cell": "rocm/dense", "failed_in_a_row": 3},
    ]
    assert len(said["pages"]) == 8


def test_since_keeps_the_newer_runs(cli, example, tmp_path):
    specs, url = example
    assert cli("report", str(specs), "--history", url, "--html", "site", "--since", "2026-11-27").code == 0
    assert "r000043" not in (tmp_path / "site" / cell_file("rocm/dense")).read_text()
    assert "3 runs since 2026-11-27" in text((tmp_path / "site" / "flaky.html").read_text())


def test_a_since_that_is_no_date_is_refused(cli, capsys):
    with pytest.raises(SystemExit) as exited:
        cli("report", "--html", "site", "--since", "last week")
    assert exited.value.code == 2
    assert "argument --since: 'last week' is no date: give YYYY-MM-DD" in capsys.readouterr().err


def test_without_a_store_or_with_an_empty_one_the_site_has_no_runs(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_MATRIX_HISTORY_URL", raising=False)
    write_specs(tmp_path / "matrices")
    result = cli("report", "--html", "site")
    assert (
        result.code == 0
        and "no history store at run-matrix-logs/history.sqlite: the site shows no runs" in result.err
    )
    assert "nv/dense no runs" in text((tmp_path / "site" / "index.html").read_text())
    (tmp_path / "empty.sqlite").write_bytes(b"")
    assert cli("report", "--html", "again", "--history", "empty.sqlite").code == 0
    assert "too few runs with a verdict" in (tmp_path / "again" / "flaky.html").read_text()
    missing = cli("report", "--html", "site", "--history", "nowhere.sqlite")
    assert (missing.code, missing.err) == (
        2,
        "run-matrix: no history store at nowhere.sqlite: `run-matrix run` writes one (or give --history)\n",
    )
    odd = cli("report", "--html", "site", "--flaky-runs", "3", "--flaky-flips", "3")
    assert odd.code == 2 and "give at least 2 runs and between 1 flip and one fewer than the runs" in odd.err


HOSTILE = "<script>alert(1)</script>"


def test_hostile_names_from_specs_and_the_store_are_text_never_markup(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "matrices"
    write_specs(specs)
    (specs / "rocm" / "evil.yaml").write_text(
        "extends: ../base/dense.yaml\nhardware: mi355x\nmatrix:\n  axes: {name: [plain, '" + HOSTILE + "']}\n"
        "  adjust:\n    bad:\n      match: {name: '" + HOSTILE + "'}\n"
        "      skip: {reason: '<img src=x onerror=alert(2)>', issue: 'javascript:alert(3)', expires: 2999-01-01}\n"
        "expect:\n  '</svg><script>alert(4)</script>': {max: 1}\n"
    )
    store = str(tmp_path / "history.sqlite")
    found = list(rows([(f"rocm/evil[name={HOSTILE}]", "mi355x"), ('x"><iframe src=//e>', "h200")], 3))
    insert(store, found)
    result = cli("report", str(specs), "--history", store, "--html", "site")
    assert result.code == 0, result.err
    written = pages(tmp_path / "site")
    assert len(written) == 11 and all(name.startswith("cells/") or "/" not in name for name in written)
    for name, page in written.items():
        assert "<script" not in page and "<img" not in page and "<iframe" not in page, name
        assert 'href="javascript:' not in page, name
    index = written["index.html"]
    assert "rocm/evil[name=&lt;script&gt;alert(1)&lt;/script&gt;]" in index
    assert (
        "&lt;img src=x onerror=alert(2)&gt;" in index and "javascript:alert(3)" in index
    )  # shown, not linked
    assert "&lt;/svg&gt;&lt;script&gt;alert(4)&lt;/script&gt;" in written[cell_file("rocm/evil")]
    assert "x&quot;&gt;&lt;iframe src=//e&gt;" in written["flaky.html"]


class FakeReader:
    """The reader's seam: rows of a store whose runs carry issue 56's bisection column."""

    class location:
        shown = "fake"

    def __init__(self, runs: list[dict]) -> None:
        self.runs = runs

    def rows(self, name: str, **parameters: object) -> list[dict]:
        return self.runs if name == "report_runs" else []


def test_the_attempts_of_a_bisection_are_listed_on_the_cell_s_page_once_rows_name_one():
    when = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    base = {"recorded_at": when, "cell": "nv/a", "content_hash": "h", "hardware": "h200", "attempt": 1,
            "outcome": "succeeded", "trusted": False, "note": "", "seconds": 60.0, "stack": ""}  # fmt: skip
    stored = [
        {**base, "seq": 1, "id": "r1", "miles_commit": "aaa", "status": "passed", "bisection": None},
        {**base, "seq": 2, "id": "r2", "miles_commit": "bbb", "status": "failed", "bisection": "b-7"},
        {**base, "seq": 3, "id": "r3", "miles_commit": "ccc", "status": "passed", "bisection": "b-7"},
    ]
    history = records.read(FakeReader(stored), None)  # type: ignore[arg-type]
    assert [r.bisection for r in history.runs] == ["", "b-7", "b-7"]
    files = site([], {"h200": "nvidia"}, history, Options(datetime.date(2026, 12, 7)), str).files
    page = text(files[cell_file("nv/a")])
    assert "Bisections bisection b-7 run recorded" in page and "r3" in page.split("bisection b-7")[1]
    alone = records.read(FakeReader(stored[:1]), None)  # type: ignore[arg-type]
    without = site([], {}, alone, Options(datetime.date(2026, 12, 7)), str).files
    assert "Bisection" not in without[cell_file("nv/a")]


def test_the_example_tool_builds_its_specs_and_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    specs, store = build(tmp_path)
    assert (specs / "rocm" / "moe.yaml").is_file() and Path(store).stat().st_size > 0


def site_job() -> dict:
    import yaml

    from tests.conftest import ROOT

    page = (ROOT / "docs" / "results-page.md").read_text()
    (block,) = [
        b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "results site" in b.splitlines()[0]
    ]
    return yaml.safe_load(block)["jobs"]


def test_the_workflow_job_that_publishes_the_site_is_valid_for_github_and_parses():
    jsonschema = pytest.importorskip("jsonschema")
    builtin = pytest.importorskip("check_jsonschema.builtin_schemas")
    import shlex

    from runner.cli import parser
    from tests.test_ci_workflow import workflow

    data = workflow()
    data["jobs"] = {**data["jobs"], **site_job()}
    validator = jsonschema.Draft7Validator(builtin.get_builtin_schema("vendor.github-workflows"))
    assert [e.message for e in validator.iter_errors(data)] == []
    job = data["jobs"]["site"]
    assert job["needs"] == "run" and job["if"] == "always() && needs.run.result != 'skipped'"
    lines = [
        line
        for step in job["steps"]
        for line in step.get("run", "").splitlines()
        if line.startswith("run-matrix ")
    ]
    assert lines == ["run-matrix report matrices --html site --budget-gpu-hours 500"]
    parser().parse_args(shlex.split(lines[0])[1:])
    uploaded = [
        s
        for s in job["steps"]
        if s.get("uses", "").startswith(("actions/upload-artifact", "actions/upload-pages-artifact"))
    ]
    assert [s["with"]["path"] for s in uploaded] == ["site", "site"]


@pytest.mark.allow_subprocess
def test_report_loads_neither_sqlalchemy_nor_rich_nor_the_run_stack(tmp_path):
    from tests.test_startup import HEAVY, loaded, under

    (tmp_path / "empty.sqlite").write_bytes(b"")
    code, modules = loaded(
        ["report", "--html", str(tmp_path / "site"), "--history", str(tmp_path / "empty.sqlite")]
    )
    assert code == 0 and (tmp_path / "site" / "index.html").is_file()
    heavy = (
        *HEAVY,
        "sqlalchemy",
        "rich",
        "matplotlib",
        "plotext",
        "junitparser",
        "runner.run",
        "runner.importer",
    )
    assert under(modules, heavy) == []
