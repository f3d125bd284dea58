"""The CLI starts fast: each command imports its own module only, and the light commands (validate,
render, list, explain, diff) never load the run/report stack, Ray, rich or the history store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cli import COMMANDS

ROOT = Path(__file__).parents[1]
HEAVY = ("ray", "torch", "sglang", "megatron", "transformers")
# what only `run`, `cleanup`, `history` (and drawing) need
RUN_STACK = (
    "runner.run",
    "runner.results.report",
    "runner.results.history",
    "runner.importer",
    "rich",
    "sqlalchemy",
    "junitparser",
)
PROBE = """
import sys, io, json, contextlib
from runner.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:  # --help
        code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(argv: list[str]) -> tuple[int, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    found = json.loads(out)
    return found["code"], found["modules"]


def under(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


@pytest.mark.allow_subprocess
@pytest.mark.parametrize(
    "argv",
    [
        ["render", "rocm/glm5-async.yaml"],
        ["validate", "matrices/"],
        ["explain", "nv/glm5-colocate.yaml"],
        ["run", "--dry-run", "--no-preflight", "rocm/glm5-async.yaml"],  # the plan alone: exit 0
    ],
)
def test_no_heavy_imports(argv: list[str]) -> None:
    code, modules = loaded(argv)
    assert (code, under(modules, HEAVY)) == (0, [])


# the light commands: no run stack, and without a checkout none of the checkout's door
LIGHT = [
    ["validate", "matrices/"],
    ["render", "rocm/glm5-async.yaml"],
    ["list", "matrices/"],
    ["explain", "nv/glm5-colocate.yaml", "args.sglang.sglang-dp-size"],
    ["diff", "nv/glm5-colocate.yaml", "rocm/glm5-async.yaml", "--format", "json"],
    ["diff", "nv/glm5-colocate.yaml", "rocm/glm5-async.yaml", "--format", "markdown"],
]


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("argv", LIGHT)
def test_light_commands_load_no_run_stack(argv: list[str]) -> None:
    code, modules = loaded(argv)
    commands = [m for m in modules if m.startswith("runner.cli.") and m != "runner.cli.output"]
    assert code == 0
    assert commands == [f"runner.cli.{COMMANDS[argv[0]][0]}"]  # the other commands stay unread
    assert under(modules, RUN_STACK + HEAVY) == []


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("argv", LIGHT)
def test_without_a_checkout_its_door_stays_unread(argv: list[str]) -> None:
    """The checkout's door (git, its sandbox, its own checks and presets) loads only for --miles-root."""
    env = {k: v for k, v in os.environ.items() if k != "MILES_ROOT"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    found = json.loads(out)
    door = ("runner.knowledge.checkout", "runner.sandbox", "subprocess")
    assert (found["code"], under(found["modules"], door)) == (0, [])


CONSOLE = """
import atexit, gc, sys
from runner.cli import console
atexit.register(lambda: print(gc.get_threshold(), gc.get_freeze_count() > 0, file=sys.stderr))
console()
"""


@pytest.mark.allow_subprocess
def test_the_console_script_collects_rarely_and_its_exit_handlers_still_run() -> None:
    """What is left when the command has ended is frozen (the exit does not walk it); the exit
    handlers run after that, and the command's output is whole."""
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE, "validate", "matrices/", "--no-cache", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, json.loads(done.stdout)["ok"]) == (0, True)
    assert done.stderr.splitlines()[-1] == "(200000, 30, 30) True"


@pytest.mark.allow_subprocess
def test_help_reads_no_command_module() -> None:
    code, modules = loaded(["--help"])
    assert code == 0  # argparse's SystemExit(0), caught by the probe
    assert [m for m in modules if m.startswith("runner.cli.") and m != "runner.cli.output"] == []


@pytest.mark.allow_subprocess
def test_history_reads_the_store_without_pydantic(tmp_path: Path) -> None:
    """`history CELL` answers from the store: SQLAlchemy and rich, no spec models (pydantic), no run."""
    from runner.results.history.location import parse
    from runner.results.history.store import AttemptRecord, Identity, Store

    path = tmp_path / "history.sqlite"
    store = Store.open(parse(str(path), "--history", from_command_line=True))
    identity = Identity("nv/cell", "nv/cell.yaml", "0123456789ab", "h200", "31f1ca96", "0")
    store.record(AttemptRecord(identity, 1, "job", "succeeded", "passed", True, "", {}))
    store.close()
    code, modules = loaded(["history", "nv/cell", "--history", str(path), "--no-plot"])
    assert code == 0
    assert under(modules, ("pydantic", "schemas", "runner.pipeline", "runner.run.cell_run", *HEAVY)) == []


@pytest.mark.allow_subprocess
def test_a_replayed_validate_loads_no_spec_stack(tmp_path: Path) -> None:
    """Warm: the verdict comes from the cache, so neither PyYAML nor pydantic nor the pipeline is read."""
    probe = PROBE.replace("main(sys.argv[1:])", "main(sys.argv[1:], fresh_process=True)")
    env = {**os.environ, "RUN_MATRIX_CACHE_DIR": str(tmp_path)}
    env.pop("RUN_MATRIX_NO_CACHE", None)

    def modules() -> tuple[int, list[str]]:
        argv = [sys.executable, "-c", probe, "validate", "matrices/"]
        found = json.loads(subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=True).stdout)
        return found["code"], found["modules"]

    cold, warm = modules(), modules()
    assert under(cold[1], ("yaml", "pydantic", "schemas", "runner.pipeline")) != []
    assert (warm[0], under(warm[1], ("yaml", "pydantic", "schemas", "runner.pipeline", *RUN_STACK))) == (
        0,
        [],
    )


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("off", [["--no-cache"], []])
def test_a_validate_without_the_cache_never_imports_it(tmp_path: Path, off: list[str]) -> None:
    """--no-cache (or RUN_MATRIX_NO_CACHE=1): checked afresh, the cache's module left unread and its
    folder never made."""
    probe = PROBE.replace("main(sys.argv[1:])", "main(sys.argv[1:], fresh_process=True)")
    env = {**os.environ, "RUN_MATRIX_CACHE_DIR": str(tmp_path / "cache")}
    env["RUN_MATRIX_NO_CACHE"] = "0" if off else "1"
    argv = [sys.executable, "-c", probe, "validate", "matrices/", *off]
    found = json.loads(subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=True).stdout)
    assert (found["code"], under(found["modules"], ("runner.validate.replay",))) == (0, [])
    assert "runner.pipeline" in found["modules"]
    assert not (tmp_path / "cache").exists()
