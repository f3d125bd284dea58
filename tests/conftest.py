"""Shared fixtures: a guard that keeps side effects out of pure tests, CLI runner, scenario files."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from runner.cli import main

DATA = Path(__file__).parent / "data"
# the cases of miles main's test_qwen3_30B_A3B/ folder, imported into matrices/qwen3-30b-a3b/
QWEN3_CASES = (
    "amd_moriep_fp8_bridge",
    "baseline",
    "deepep_fp8",
    "deepep_fp8_bridge",
    "disagg_broadcast",
    "dp_attention",
    "fully_async",
    "int4_rollout",
    "r3_baseline",
    "r3_deepep_fp8",
)
# the cases that register for miles' ROCm CI too: each has an AMD cell, [platform=rocm]
QWEN3_AMD_CASES = ("baseline", "disagg_broadcast", "fully_async", "r3_baseline")
GOLDEN = Path(__file__).parent / "golden"
T = TypeVar("T")


def fake_checkout(tmp_path: Path, *layers: str) -> Path:
    """``tmp_path/miles``: the fake miles checkout with the ``DATA`` folders ``layers`` laid over it,
    readable by the import sandbox's unprivileged user (nobody, when the tests run as root)."""
    tmp_path.chmod(0o755)
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    for layer in layers:
        shutil.copytree(DATA / layer, root, dirs_exist_ok=True)
    return root


def pytest_sessionstart(session: pytest.Session) -> None:
    """Started in the background (``pytest &`` from a script: no job control), the tests inherit
    SIGINT ignored, and so would every run they start: the tests that press Ctrl-C on run-matrix
    would find it deaf. Started under ``nohup``, they inherit SIGHUP ignored, and the tests of a
    hang-up would find it deaf too. They run with the handlers of a terminal or CI: Python's own
    for SIGINT, the default for SIGHUP (the tests of an ignored signal ignore it themselves)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from the code")


@pytest.fixture(autouse=True)
def _no_side_effects(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only tests marked `allow_subprocess` may start processes (STYLE.md §11)."""
    if request.node.get_closest_marker("allow_subprocess"):
        return

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"this test must not start processes: {args[:1]}")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """run-matrix's cache (expanded presets) goes to a folder of the test run's, never the user's."""
    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _no_hf_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's Hugging Face cache answers import's reads of a config.json: tests see an empty one."""
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.getbasetemp() / "no-hf-home"))


@pytest.fixture(autouse=True)
def _no_runner_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU runner's visible-devices mask would change every rendered launch: tests set their own."""
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run run-matrix in-process, as tox's tests do."""

    def run(*argv: str) -> Result:
        code = main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], Path]]:
    """Write small YAML scenario files into a matrices tree under tmp_path (cwd there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hardware").mkdir()

    def write_file(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    yield write_file


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """Compare text with tests/golden/NAME; `pytest --update-golden` rewrites it."""

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if request.config.getoption("--update-golden"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual)
        assert path.exists(), f"no golden file {path}: run pytest --update-golden and review it"
        assert actual == path.read_text(), f"{path} is out of date: review, then pytest --update-golden"

    return check


ROOT = Path(__file__).parents[1]
CALLER_ENV = ("MILES_ROOT", "WANDB_API_KEY", "NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository as the current directory, without the caller's env vars that change a launch."""
    monkeypatch.chdir(ROOT)
    for name in CALLER_ENV:
        monkeypatch.delenv(name, raising=False)
    return ROOT


POSTGRES_URL = (
    "RUN_MATRIX_TEST_POSTGRES_URL"  # a server the tests may create databases on (.ci/run starts one)
)


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty history store: a SQLite file, or a fresh database on the real PostgreSQL server
    (skipped without one, unless RUN_MATRIX_POSTGRES=required, as .ci/run sets)."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite")
        return
    import os

    server = os.environ.get(POSTGRES_URL)
    if not server:
        if os.environ.get("RUN_MATRIX_POSTGRES") == "required":
            pytest.fail(f"RUN_MATRIX_POSTGRES=required but ${POSTGRES_URL} names no server")
        pytest.skip(f"no PostgreSQL server (${POSTGRES_URL})")
    yield from _fresh_database(server)


def _fresh_database(server: str) -> Iterator[str]:
    import uuid

    import sqlalchemy as sa

    admin_url = sa.make_url(server).set(drivername="postgresql+psycopg")
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"rm_test_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.set(database=name, drivername="postgresql").render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def promptly(call: Callable[[], T], seconds: float = 20) -> T:
    """``call()``'s result, failing (not hanging the suite) when it blocks: on a FIFO, /dev/zero."""
    done: list[T] = []
    worker = threading.Thread(target=lambda: done.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, f"still running after {seconds}s"
    return done[0]


def alive(pid: int) -> bool:
    """The process has not ended (a zombie, left for its parent to reap, has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


UPSTREAM = ROOT.parent / "shared" / "upstream"  # miles at two commits, as git archives (see its README)
UPSTREAM_COMMITS = {"31f1ca96": "miles-31f1ca96.tar.gz", "dc8b499b": "miles-dc8b499b.tar.gz"}


@pytest.fixture(scope="session")
def upstream_miles(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A real miles tree at a commit of UPSTREAM_COMMITS, extracted once per test run and readable by
    the sandbox's user (skipped without the archives, unless RUN_MATRIX_UPSTREAM=required, as .ci/run sets)."""
    import os
    import tarfile

    trees: dict[str, Path] = {}

    def tree(commit: str) -> Path:
        if commit in trees:
            return trees[commit]
        archive = UPSTREAM / UPSTREAM_COMMITS[commit]
        if not archive.is_file():
            if os.environ.get("RUN_MATRIX_UPSTREAM") == "required":
                pytest.fail(f"RUN_MATRIX_UPSTREAM=required but {archive} is not there")
            pytest.skip(f"no upstream miles archive {archive}")
        folder = tmp_path_factory.mktemp(f"miles-{commit}")
        folder.chmod(0o755)
        with tarfile.open(archive) as opened:
            opened.extractall(folder, filter="data")
        (top,) = folder.iterdir()
        for path in [top, *top.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        trees[commit] = top
        return top

    return tree


# profiles a test may count on: required members, never the whole list, so that a profile a user adds
# as README's "Add new hardware" says (matrices/hardware/h20.yaml) breaks none of the project's tests
REQUIRED_PROFILES = ("b200", "gb200", "h100", "h200", "mi300x", "mi325x", "mi350x", "mi355x")
_KNOWN = re.compile(r"\(known: ([^)]*)\)")


def known_elided(message: str) -> str:
    """``message`` with its "(known: ...)" list of profiles checked (sorted, every required one in it)
    and written as "(known: ...)"."""
    found = _KNOWN.search(message)
    assert found, message
    names = found.group(1).split(", ")
    assert names == sorted(names) and set(REQUIRED_PROFILES) <= set(names), names
    return _KNOWN.sub("(known: ...)", message)
