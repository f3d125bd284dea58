"""The results site in a real browser: Debian's headless Chromium, driven by Selenium through Debian's
chromedriver (nothing downloaded). It asserts what a person sees on each page type, that no page
logs a console error or runs a script it was handed, and saves one screenshot per page type
(under $RUN_MATRIX_ARTIFACTS/report-html when set). Under RUN_MATRIX_BROWSER=required (.ci/run) a
missing browser fails these tests; elsewhere they are skipped, saying why."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.results.site.pages import cell_file
from tools.report_html_example import browser, browser_programs, build

pytestmark = pytest.mark.allow_subprocess  # chromedriver and Chromium are processes of their own
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def programs() -> tuple[str, str]:
    found = browser_programs()
    if isinstance(found, str):
        if os.environ.get("RUN_MATRIX_BROWSER") == "required":
            pytest.fail(f"RUN_MATRIX_BROWSER=required, and {found}")
        pytest.skip(found)
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example site, with a hostile cell in its store."""
    folder = tmp_path_factory.mktemp("report-html")
    here = Path.cwd()
    os.chdir(folder)
    try:
        specs, store = build(folder)
        from tools.report_html_example import insert, rows

        insert(
            store,
            (
                {**r, "seq": r["seq"] + 1000, "id": f"x{r['seq']}"}
                for r in rows([(f"nv/{HOSTILE}", "h200")], 2)
            ),
        )
        assert (
            main(["report", str(specs), "--history", store, "--html", "site", "--budget-gpu-hours", "100"])
            == 0
        )
    finally:
        os.chdir(here)
    return folder / "site"


@pytest.fixture(scope="module")
def session(programs: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with browser(*programs, tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = (
        Path(os.environ.get("RUN_MATRIX_ARTIFACTS") or tmp_path_factory.mktemp("artifacts")) / "report-html"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shown(session: Any, site: Path, page: str, artifacts: Path, name: str) -> Any:
    """Open ``page``, keep its screenshot as ``name``.png, and fail on any console error it logged."""
    from selenium.common.exceptions import NoAlertPresentException

    session.get((site / page).as_uri())
    session.save_screenshot(str(artifacts / f"{name}.png"))
    assert (artifacts / f"{name}.png").stat().st_size > 1000
    errors = [entry for entry in session.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    with pytest.raises(NoAlertPresentException):
        session.switch_to.alert  # noqa: B018 - nothing a spec or the store held ran as a script
    return session


def by_css(session: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(session.find_elements(By.CSS_SELECTOR, selector))


def test_the_parity_page_shows_each_vendor_s_share_and_the_split_tests_first(session, site, artifacts):
    shown(session, site, "index.html", artifacts, "parity")
    glance = by_css(session, "p.glance")[0].text
    assert glance.startswith("6 cells; failing now: nv/moe, rocm/dense; flaky: nv/moe")
    shares = {row.text for row in by_css(session, "table.shares tbody tr")}
    assert {"amd 2 of 3 67%", "nvidia 2 of 3 67%", "h200 2 of 3 67%", "b200 0 of 3 0%"} <= shares
    first = by_css(session, "table.parity tbody tr")[0]
    assert "passes on one platform, fails on another" in first.text and "split" in first.get_attribute(
        "class"
    )
    skipped = by_css(session, "table.skips tbody tr")[0].text
    assert "FP8 rollout kernels missing on gfx950" in skipped and "2999-01-01" in skipped


def test_the_flaky_page_names_the_flaky_cell_and_the_streaks(session, site, artifacts):
    shown(session, site, "flaky.html", artifacts, "flaky")
    flaky = by_css(session, "tr.flaky")
    assert [row.text.split()[0] for row in flaky] == ["nv/moe"]
    assert "7 flips in the last 10 runs" in flaky[0].text
    rows = {row.text.split()[0]: row.text for row in by_css(session, "table.flaky-table tbody tr")}
    assert "3 runs since 2026-11-27" in rows["rocm/dense"] and "1 infra failure" in rows["rocm/dense"]
    assert f"nv/{HOSTILE}" in rows  # a hostile cell id is read as text


def test_a_cell_page_draws_its_gated_metric_with_band_and_bound(session, site, artifacts):
    shown(session, site, cell_file("rocm/dense"), artifacts, "cell")
    (chart,) = by_css(session, "svg.chart")
    assert chart.size["width"] > 300 and chart.size["height"] > 100
    assert len(by_css(session, "svg.chart circle")) == 14
    assert by_css(session, "svg.chart polygon.band")[0].size["height"] > 5
    assert by_css(session, "svg.chart line.bound")
    runs = by_css(session, "table.runs tbody tr")
    assert len(runs) == 14 and "failed (gate failure)" in runs[0].text
    assert "ray job submit" in by_css(session, "pre.launch")[0].text
    assert "HIP_FORCE_DEV_KERNARG" in by_css(session, "pre.diff")[0].text


def test_the_budget_page_marks_the_weeks_over_budget(session, site, artifacts):
    shown(session, site, "budget.html", artifacts, "budget")
    weeks = [row.text for row in by_css(session, "table.weeks tbody tr")]
    assert weeks == ["2026-W47 123.20 over budget", "2026-W48 123.20 over budget"]


def test_a_hostile_cell_s_page_shows_its_name_as_text(session, site, artifacts):
    shown(session, site, cell_file(f"nv/{HOSTILE}"), artifacts, "hostile")
    assert by_css(session, "h1")[0].text == f"cell nv/{HOSTILE}"
