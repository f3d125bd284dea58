#!/usr/bin/env python3
"""The example results site: two small tests on an NVIDIA and an AMD profile, and a history store of
weeks of their runs (a cell that passes, one whose newest runs fail, a flaky one, an infra failure).

The browser tests, the benchmark (tools/bench_report_html.py) and the screenshot in
docs/results-page.md are made from it:

  python tools/report_html_example.py DIR [--screenshot docs/images/results-page.png]

DIR gets matrices/ (the specs), history.sqlite (the store) and site/ (what `report --html` wrote).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.results.history import schema  # noqa: E402
from runner.results.history.location import parse  # noqa: E402
from runner.results.history.store import Store  # noqa: E402

BASE = """
hardware: h200
model: {type: glm5-744B-A40B_4layer}
cluster: {gpus_per_node: 8}
launch: {script: train.py}
args:
  misc: {colocate: true}
expect:
  train/loss: {max: 3.0, band: {rel_up: 0.1, rel_down: 0.1}, steps: last}
"""
SPECS = {
    "base/dense.yaml": BASE,
    "base/moe.yaml": BASE.replace("colocate: true}", "colocate: true, moe-router-topk: 2}"),
    "nv/dense.yaml": "extends: ../base/dense.yaml\nci: {backend: cuda, suite: stage-c-8-gpu-h200}\n",
    "rocm/dense.yaml": "extends: ../base/dense.yaml\nhardware: mi355x\n"
    "ci: {backend: rocm, suite: stage-c-8-gpu-mi355x}\nenv: {HIP_FORCE_DEV_KERNARG: '1'}\n"
    "why: {env.HIP_FORCE_DEV_KERNARG: ROCm's kernel arguments in device memory}\n",
    "nv/moe.yaml": "extends: ../base/moe.yaml\nci: {backend: cuda, suite: stage-c-8-gpu-h200}\n",
    "rocm/moe.yaml": textwrap.dedent(
        """\
        extends: ../base/moe.yaml
        hardware: mi355x
        ci: {backend: rocm, suite: stage-c-8-gpu-mi355x}
        matrix:
          axes: {fp8: [false, true]}
          adjust:
            fp8_off:
              match: {fp8: true}
              skip:
                reason: FP8 rollout kernels missing on gfx950
                issue: https://github.com/radixark/miles/issues/1
                expires: 2999-01-01
        """
    ),
}
START = datetime.datetime(2026, 11, 16, 2, 0, tzinfo=datetime.timezone.utc)


def write_specs(folder: Path) -> None:
    (folder / "hardware").mkdir(parents=True, exist_ok=True)  # marks the matrices root the specs lie in
    for name, text in SPECS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))


def story(cell: str, index: int, count: int) -> tuple[str, str]:
    """(status, outcome) of run ``index`` of ``count`` of ``cell``."""
    newest = count - 1 - index
    if cell.startswith("rocm/dense"):
        if newest < 3:
            return "failed", "succeeded"  # its last three left the corridor: a gate failure
        return ("error", "infra") if newest == 5 else ("passed", "succeeded")
    if cell.startswith("nv/moe") and newest < 8:
        return ("passed", "succeeded") if newest % 2 else ("failed", "succeeded")
    if cell.startswith("rocm/moe") and newest == 2:
        return "failed", "timeout"
    return "passed", "succeeded"


def rows(
    cells: Sequence[tuple[str, str]], count: int, start: datetime.datetime = START
) -> Iterator[dict[str, Any]]:
    """Every run of ``cells`` (id, hardware), a day apart, each with its train/loss sample and gate."""
    seq = 0
    for index in range(count):
        for cell, hardware in cells:
            seq += 1
            status, outcome = story(cell, index, count)
            value = 2.0 + 0.01 * (index % 5) + (0.6 if status == "failed" and outcome == "succeeded" else 0.0)
            yield {
                "seq": seq, "id": f"r{seq:06d}", "cell": cell, "hardware": hardware, "status": status,
                "outcome": outcome, "value": value, "trusted": status == "passed",
                "recorded_at": start + datetime.timedelta(days=index, minutes=seq % 60),
            }  # fmt: skip


def insert(url: str, runs: Iterable[dict[str, Any]]) -> int:
    """Write the runs straight into the store's tables (as many recordings would), in one transaction."""
    store = Store.open(parse(url, "--history", from_command_line=True))
    found = list(runs)
    common = {"spec": "example.yaml", "miles_commit": "31f1ca96b0c5", "version": "0.1.0", "attempt": 1}
    with store.writing() as connection:
        connection.execute(
            sa.insert(schema.runs),
            [
                {**common, "seq": r["seq"], "id": r["id"], "recorded_at": r["recorded_at"], "cell": r["cell"],
                 "content_hash": "c0ffee", "hardware": r["hardware"], "submission_id": f"ray_{r['seq']}",
                 "outcome": r["outcome"], "status": r["status"], "trusted": r["trusted"],
                 "note": "" if r["trusted"] else r["status"], "seconds": 1800.0 + r["seq"] % 7 * 60,
                 "launch_run_id": "", "stack": "miles-31f1ca96"}
                for r in found
            ],
        )  # fmt: skip
        sample = {"metric": "train/loss", "kind": "step", "step": 9, "nonfinite": None, "last": True}
        connection.execute(
            sa.insert(schema.samples), [{**sample, "run": r["seq"], "value": r["value"]} for r in found]
        )
        gate = {
            "metric": "train/loss",
            "step": -1,
            "at_step": 9,
            "reference": 2.02,
            "low": 1.818,
            "high": 2.222,
        }
        connection.execute(
            sa.insert(schema.gates),
            [{**gate, "run": r["seq"], "value": r["value"], "baseline_runs": 10, "enforce": True,
              "verdict": "fail" if r["value"] > 2.222 else "pass"} for r in found],
        )  # fmt: skip
    store.close()
    return len(found)


def build(folder: Path, count: int = 14) -> tuple[Path, str]:
    """The example's specs under ``folder``/matrices and its store; (the specs' folder, the store's path)."""
    from runner import pipeline

    specs = folder / "matrices"
    write_specs(specs)
    store = str(folder / "history.sqlite")
    cells = [(c.id, c.profile.name) for c in pipeline.select([str(specs)]) if not c.skip]
    insert(store, rows(cells, count))
    return specs, store


# Chromium as root in a container: no sandbox, no GPU, and nothing that reaches the network
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,1000",
)  # fmt: skip


def browser_programs() -> tuple[str, str] | str:
    """(chromium, chromedriver) as Debian installs them, or why they cannot be used."""
    import shutil

    found = [shutil.which(name) for name in ("chromium", "chromedriver")]
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra: pip install -e '.[test]')"
    if None in found:
        return "no chromium or chromedriver on PATH (apt-get install -y chromium chromium-driver)"
    return str(found[0]), str(found[1])


@contextlib.contextmanager
def browser(chromium: str, driver: str, profile: Path) -> Iterator[Any]:
    """A headless Chromium driven by Selenium through Debian's chromedriver: Selenium Manager is never
    asked (it would try the network), and the browser's console is kept for the tests to read."""
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()


def screenshot(page: Path, target: Path) -> None:
    found = browser_programs()
    if isinstance(found, str):
        raise SystemExit(f"no screenshot: {found}")
    with tempfile.TemporaryDirectory() as profile, browser(*found, Path(profile)) as session:
        session.get(page.resolve().as_uri())
        target.parent.mkdir(parents=True, exist_ok=True)
        session.save_screenshot(str(target))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path)
    parser.add_argument("--screenshot", type=Path, metavar="PNG", help="the parity page, as docs/ shows it")
    arguments = parser.parse_args()
    from runner.cli import main as run_matrix

    specs, store = build(arguments.folder)
    site = arguments.folder / "site"
    code = run_matrix(
        ["report", str(specs), "--history", store, "--html", str(site), "--budget-gpu-hours", "100"]
    )
    if code == 0 and arguments.screenshot is not None:
        screenshot(site / "index.html", arguments.screenshot)
    return code


if __name__ == "__main__":
    sys.exit(main())
