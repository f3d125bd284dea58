"""The warm worker pool (``runner/sandbox/workers.py``), and where processes start: ``runner/importer/``
says what to run, ``runner/sandbox/`` starts it (DESIGN.md, the layers: subprocesses start only in
``run/``, ``sandbox/`` and the door's git entry point)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import runner
from runner.sandbox.workers import Workers

SERVER = (
    "import os\n"
    "from runner.sandbox.workers import serve\n"
    "def answer(request):\n"
    "    if request == 'die':\n"
    "        print('the last words')\n"
    "        os._exit(3)\n"
    "    print('said on stdout, kept out of the answers')\n"
    "    return (request, os.getpid())\n"
    "serve(answer)\n"
)
# what starts a process, by module or by name (os.fork, os.execv, subprocess.run, ...)
STARTERS = {"subprocess", "multiprocessing", "_posixsubprocess", "pty", "concurrent.futures.process"}
STARTING = ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "spawnv")


def _pool(jobs: int = 1) -> Workers:
    return Workers(
        [sys.executable, "-c", SERVER], jobs, rank=lambda _: 0, died=lambda r, last: ("died", r, last)
    )


@pytest.mark.allow_subprocess
def test_a_worker_answers_each_request_and_one_that_dies_is_started_again():
    with _pool() as pool:
        first = pool.submit("a").result()
        second = pool.submit("b").result()
        died = pool.submit("die").result()
        again = pool.submit("c").result()
    assert (first[0], second[0], again[0]) == ("a", "b", "c")
    assert first[1] == second[1] != again[1]  # warm: one process, until it died
    assert died == ("died", "die", "the last words")


@pytest.mark.allow_subprocess
def test_after_stop_what_is_left_is_answered_without_a_worker():
    with _pool() as pool:
        pool.stop()
        assert pool.submit("a").result() == ("died", "a", "run-matrix was interrupted")


def test_the_importer_starts_no_process_itself():
    """No module of ``runner/importer/`` imports a module that starts processes or calls ``os``'s own
    process starters: the sandbox (its workers, its forks, its child) does."""
    found = []
    for path in sorted((Path(runner.__file__).parent / "importer").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}:{node.lineno} imports {n}" for n in names if n in STARTERS]
            if isinstance(node, ast.Attribute) and node.attr.startswith(STARTING):
                found.append(f"{path.name}:{node.lineno} names .{node.attr}")
    assert found == []
