"""run's preflight runs miles' own parser before the first ``ray start`` (runner/run/miles_check.py).

The checkout is the fake miles with a ``miles/utils/arguments.py`` written here (tests/data/fake-miles
has none: its flags would replace the catalog's for every test that uses it): an argparse parser of
every miles flag of the shipped catalog, whose ``parse_args()`` refuses, as ``parser.error`` does, when
the spec's env: sets ``FAKE_MILES_PARSER_REFUSES``. The interpreter is the node's python3 (the one
on PATH) or --miles-python. No test here needs a Ray cluster: a refused cell never reaches one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner import pipeline
from runner.errors import Location
from runner.knowledge import flags
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.run import miles_check
from runner.run.plan import Options
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess
FAKE_MILES = DATA / "fake-miles"
FAKE_BIN = DATA / "fake-bin"
MATRICES = Path(__file__).parents[1] / "matrices"
REFUSAL = "argument --num-rollout: must be at least 2"
PARSER = """import argparse
import os


def parse_args():
    parser = argparse.ArgumentParser()
{}
    args, _ = parser.parse_known_args()
    if os.environ.get("FAKE_MILES_PARSER_REFUSES"):
        parser.error(os.environ["FAKE_MILES_PARSER_REFUSES"])
    return args
"""


def _argument(flag: flags.Flag) -> str:
    if flag.kind == "switch":
        return f"    parser.add_argument('--{flag.name}', action='store_true')"
    typed = f", type={flag.type}" if flag.type in ("int", "float") else ""
    many = f", nargs={flag.nargs!r}" if flag.nargs is not None else ""
    return f"    parser.add_argument('--{flag.name}'{typed}{many})"


def parser_checkout(tmp_path: Path, with_parser: bool = True) -> Path:
    """The fake miles, with a parser of the shipped catalog's miles flags (readable by the sandbox)."""
    root = tmp_path / "miles"
    shutil.copytree(FAKE_MILES, root)
    if with_parser:
        catalog = flags.choose("dc8b499b", None, Location(Path("test"))).catalog
        own = {f.name: f for f in catalog.flags if f.program == "miles"}  # one flag may be read twice
        lines = [_argument(f) for f in own.values()]
        (root / "miles/utils/arguments.py").write_text(PARSER.format("\n".join(lines)))
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    tmp_path.chmod(0o755)
    return root


def ray_processes(marker: str) -> set[int]:
    """This user's raylet and gcs_server processes whose environment holds ``marker`` (this test's own:
    other users of the machine run Ray too), read from /proc; nothing is stopped."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            mine = entry.name.isdigit() and entry.stat().st_uid == os.getuid()
            ray = mine and (entry / "comm").read_text().strip() in ("raylet", "gcs_server")
            if ray and marker.encode() in (entry / "environ").read_bytes():
                found.add(int(entry.name))
        except OSError:  # it ended while we looked
            continue
    return found


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """A spec extending the shipped GLM-5 async one with ``extra``; cwd is tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(
        "PATH", f"{FAKE_BIN}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"
    )
    monkeypatch.setenv("MILES_ROOT", str(parser_checkout(tmp_path)))
    monkeypatch.setenv("RUN_MATRIX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RUN_MATRIX_GPUS", "amd:8")  # a local head would declare 8: only the check stops it
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "WANDB_API_KEY", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)

    def write(extra: str) -> Path:
        path = tmp_path / "m" / "fake" / "async.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        paths = (
            f"{{models: {tmp_path}/models, datasets: {tmp_path}/datasets, shared_data: {tmp_path}/shared}}"
        )
        lines = [f"extends: {MATRICES}/rocm/glm5-async.yaml", f"vars: {paths}", "matrix: !delete"]
        path.write_text("\n".join([*lines, "requires: !delete", extra]) + "\n")
        return path

    return write


def run(cli: Callable[..., Any], *argv: str) -> tuple[int, dict[str, Any], str]:
    result = cli("run", *argv, "--log-dir", "logs", "--format", "json")
    return result.code, json.loads(result.out) if result.out else {}, result.err


def test_a_launch_miles_refuses_fails_its_cell_before_any_ray_process(cli, spec, tmp_path):
    spec(f"env: {{FAKE_MILES_PARSER_REFUSES: '{REFUSAL}'}}")
    code, report, err = run(cli, "m/fake/async.yaml", "--skip-prepare")
    assert ray_processes(str(tmp_path / "state")) == set()
    assert report.get("clusters") == [], (code, err)  # no head was started, so none was recorded
    (cell,) = report["cells"]
    assert (code, cell["status"], cell["attempts"]) == (1, "failed", []), err
    assert cell["reason"] == (
        f"{MATRICES}/base/glm5-744b-a40b-4layer.yaml:76: error [miles] args.rollout.num-rollout: miles refuses"
        f" it: train_async.py: error: {REFUSAL}\n"
        "  ==> miles' own parse_args() refuses this launch: change the flag it names (the message is miles')"
    )
    (note,) = report["notes"]
    assert re.fullmatch(r"miles' parser \(python3\) checked 1 cell in \d+\.\d s: it refuses 1", note)
    assert f"run-matrix: {note}\n" in err
    assert "Traceback" not in err


def test_the_summary_says_why_miles_parser_was_not_run(cli, spec):
    spec(f"retry: {{infra: 0}}\nenv: {{FAKE_MILES_PARSER_REFUSES: '{REFUSAL}'}}")
    argv = ("m/fake/async.yaml", "--skip-prepare", "--no-preflight", "--ray-address", "http://127.0.0.1:9")
    code, report, err = run(cli, *argv)
    assert (code, report["notes"]) == (1, ["miles' parser not run: --no-preflight"])
    assert report["cells"][0]["reason"].startswith("Ray at http://127.0.0.1:9 is unreachable: ")
    assert "run-matrix: miles' parser not run: --no-preflight\n" in err


def planned(miles_root: Path) -> Planned:
    cell = pipeline.cell(MATRICES / "rocm/glm5-async.yaml")
    return Planned(
        cell, render(cell, Context(miles_root=str(miles_root))), "glm5-async.yaml", "run-matrix run"
    )


def options(miles_root: Path | None, path: str, **given: Any) -> Options:
    return Options(miles_root, None, Path("logs"), caller_env={"PATH": path}, **given)


@pytest.mark.parametrize(
    ("given", "note"),
    [
        ({"miles_check": False}, "miles' parser not run: --no-miles-check"),
        ({"preflight": False}, "miles' parser not run: --no-preflight"),
    ],
)
def test_what_turns_the_check_off_is_named(tmp_path, given, note):
    root = parser_checkout(tmp_path)
    verdict = miles_check.check([planned(root)], options(root, "/usr/bin:/bin", **given))
    assert (verdict.refused, verdict.note) == ({}, note)


def test_no_python3_on_path_skips_the_check_and_says_so(tmp_path):
    root = parser_checkout(tmp_path)
    verdict = miles_check.check([planned(root)], options(root, str(tmp_path / "empty")))
    assert (verdict.refused, verdict.note) == (
        {},
        "miles' parser not run: python3 is not on PATH (--no-miles-check skips the check)",
    )


def test_a_miles_python_that_is_missing_skips_the_check_and_says_so(tmp_path):
    root = parser_checkout(tmp_path)
    python = tmp_path / "no-such-python"
    verdict = miles_check.check([planned(root)], options(root, "/usr/bin:/bin", miles_python=python))
    assert (verdict.refused, verdict.note) == ({}, f"miles' parser not run: {python} not an executable file")


def test_a_python_that_cannot_import_miles_skips_the_check_with_the_reason(tmp_path):
    root = parser_checkout(tmp_path, with_parser=False)
    verdict = miles_check.check([planned(root)], options(root, f"{Path(sys.executable).parent}"))
    assert (verdict.refused, verdict.note) == (
        {},
        "miles' parser not run: python3 cannot import miles"
        " (ModuleNotFoundError: No module named 'miles.utils.arguments')",
    )


def test_a_launch_miles_accepts_is_no_refusal(tmp_path):
    root = parser_checkout(tmp_path)
    verdict = miles_check.check([planned(root)], options(root, f"{Path(sys.executable).parent}"))
    assert verdict.refused == {}
    assert re.fullmatch(r"miles' parser \(python3\) checked 1 cell in \d+\.\d s", verdict.note)


def test_render_with_miles_python_refuses_before_writing(cli, spec, tmp_path):
    spec(f"env: {{FAKE_MILES_PARSER_REFUSES: '{REFUSAL}'}}")
    result = cli("render", "m/fake/async.yaml", "--miles-python", sys.executable, "-o", "out")
    assert (result.code, result.out, (tmp_path / "out").exists()) == (2, "", False)
    assert result.err.endswith(
        f"{MATRICES}/base/glm5-744b-a40b-4layer.yaml:76: error [miles] args.rollout.num-rollout: miles refuses"
        f" it: train_async.py: error: {REFUSAL}\n"
        "  ==> miles' own parse_args() refuses this launch: change the flag it names (the message is miles')\n"
        "run-matrix: miles' parser refuses 1 launch(es): nothing written\n"
    )


def test_render_with_a_missing_miles_python_is_an_environment_error(cli, spec, tmp_path):
    spec("")
    result = cli("render", "m/fake/async.yaml", "--miles-python", str(tmp_path / "py"), "-o", "out")
    assert (result.code, result.out) == (3, "")
    assert f"--miles-python {tmp_path / 'py'}: not an executable file" in result.err
    assert "Traceback" not in result.err


def test_a_dry_run_asks_miles_parser_as_the_run_does(cli, spec):
    spec(f"env: {{FAKE_MILES_PARSER_REFUSES: '{REFUSAL}'}}")
    dry = ("m/fake/async.yaml", "--skip-prepare", "--dry-run")
    code, plan, _ = run(cli, *dry)  # the node's python3, as the run's own check runs it
    assert (code, plan["verdict"]) == (1, "exit 1: miles' parser refuses 1 cell")
    code, plan, _ = run(cli, *dry, "--no-miles-check")
    assert (code, plan["exit_code"], plan["notes"]) == (0, 0, ["miles' parser not run: --no-miles-check"])
    code, plan, _ = run(cli, *dry, "--miles-python", sys.executable)
    (cell,) = plan["cells"]
    assert (code, plan["verdict"]) == (1, "exit 1: miles' parser refuses 1 cell")  # as the run's code is
    assert cell["would"].startswith("fail: ") and cell["would"].endswith(
        f"miles refuses it: train_async.py: error: {REFUSAL}\n"
        "  ==> miles' own parse_args() refuses this launch: change the flag it names (the message is miles')"
    )
