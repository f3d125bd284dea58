"""suite: import a whole tree of miles tests — one output folder per test folder, side by side.

    find the folders that hold tests -> a folder import each (folder.py), in threads -> every
    single import of every folder in a pool of ``jobs`` worker processes -> what became of each test

``tests/e2e/ckpt/`` goes to ``OUT/ckpt/``, ``tests/e2e/megatron/test_glm47_flash/`` to
``OUT/megatron/test_glm47_flash/``. The workers start once (``workers.py``) and keep what they learn
(conventions, presets) from one test to the next; each
recording is kept in ``cache`` by what the sandbox showed (``recordings.py``), so the overlay
import of a case, and an import of an unchanged tree, records nothing again. A test that hangs is
refused at its ``timeout``; the others go on. A link among the tests is never followed (refused).
What the suite wrote is listed in ``OUT``'s root marker (``written.py``), which makes ``OUT`` a
matrices root; with ``force``, a re-import replaces exactly what the last one wrote.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.errors import RunMatrixError, SpecError, UsageError, counted
from runner.importer import Request, recordings, together, written
from runner.importer.batch import answer, request_of
from runner.importer.folder import Folder, FolderImported, case_file, import_folder, walk
from runner.importer.workers import pool
from runner.knowledge import bundled, checkout
from runner.sandbox.workers import Workers

MAX_FOLDERS = 500  # folders below the root looked into, at the most
MAX_TESTS = 2000  # tests in the whole tree, at the most
MAX_THREADS = 32  # folders imported at once (their single imports share the workers)
SANDBOXES = 2  # sandboxes recording together per job (a few forks run pytest for seconds, most for none)
LOOKS = 4  # rounds of looking up what the imports lack after the first recording together, at most
# why: a round holds every import up while its few forks run; fewer tests than this per sandbox are
# recorded alone by their imports instead, side by side with the other imports' work (miles main: the
# rounds after the first look held 5 tests each and cost 2 s apiece, a fifth of a cold import)
FEWEST_PER_SANDBOX = 2
Progress = Callable[[Path, str, str], None]  # a test, its outcome (imported, refused), why


@dataclass(frozen=True)
class Suite:
    tests: Path
    options: Folder  # what every folder import gets (its tests and output are each folder's)
    jobs: int = 1


# mutable: the folders' threads fill it as each folder ends (told() under a lock), parses.py after
@dataclass
class SuiteImported:
    folders: dict[Path, FolderImported] = field(default_factory=dict)  # relative folder -> its import
    outcomes: dict[Path, tuple[str, str]] = field(default_factory=dict)  # test -> outcome, why
    failed: dict[Path, str] = field(default_factory=dict)  # relative folder -> why it wrote nothing
    changed: bool = False  # the checkout changed while it was imported: nothing recorded meanwhile is kept
    removed: list[Path] = field(default_factory=list)  # what an earlier import wrote and --force took away


def test_folders(root: Path) -> dict[Path, list[Path]]:
    """Every folder under ``root`` that holds a ``test_*.py`` (by its path relative to ``root``), with
    them, links included (folder.py refuses a link); no link to a folder is followed."""
    if not root.is_dir():
        raise UsageError(f"no folder {root}")
    found: dict[Path, list[Path]] = {}
    for seen, (folder, others, names) in enumerate(walk(root)):
        names[:] = sorted(n for n in names if not n.startswith(".") and n != "__pycache__")
        if seen >= MAX_FOLDERS:
            raise UsageError(f"{root} holds more than {MAX_FOLDERS} folders; import a part of it")
        named = [n for n in [*others, *names] if n.startswith("test_") and n.endswith(".py")]
        tests = sorted(root / folder / n for n in named)
        if tests:
            found[Path(folder)] = tests
    total = sum(len(tests) for tests in found.values())
    if not found:
        raise UsageError(f"{root} holds no test_*.py, in no folder below it either")
    if total > MAX_TESTS:
        raise UsageError(f"{root} holds {total} tests; import at most {MAX_TESTS} at once")
    return found


def import_suite(
    suite: Suite, progress: Progress | None = None, phase: Callable[[str], None] | None = None
) -> SuiteImported:
    """Every folder of tests imported; what became of each test, also told to ``progress`` as known
    (and to ``phase`` what the tests are recorded together for, before)."""
    folders = test_folders(suite.tests)
    output = suite.options.output
    before = written.earlier(output)
    with contextlib.ExitStack() as stack:
        if suite.options.cache is None:  # --no-cache: recorded afresh, into a cache of this run's own
            private = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="run-matrix-recordings-")))
            suite = replace(suite, options=replace(suite.options, cache=private / "recordings"))
        result = _imported(suite, folders, progress, phase or (lambda _: None))
    now = [path for found in result.folders.values() for path in found.files]
    if suite.options.force:
        result.removed = written.replace(output, now, before)
    if now or before:
        kept = [*now, *(path for path in before if path not in now and path.is_file())]
        root = suite.options.miles_root
        written.mark(output, kept, suite.tests, root, checkout.head_commit(root) if root else None)
    return result


def _imported(
    suite: Suite, folders: dict[Path, list[Path]], progress: Progress | None, phase: Callable[[str], None]
) -> SuiteImported:
    result = SuiteImported()
    lock = threading.Lock()

    def told(test: Path, outcome: str, why: str) -> None:
        with lock:
            result.outcomes[test] = (outcome, why)
        if progress is not None:
            progress(test, outcome, why)

    made = _made_folders(suite.options.output, list(folders))
    threads_wanted = 1 if suite.jobs == 1 else min(len(folders), MAX_THREADS)
    cache, root = suite.options.cache, suite.options.miles_root
    held = [root.resolve()] if root is not None and cache is not None else []
    kept_before = recordings.entries(cache) if cache is not None else set()
    stamp_before = recordings.stamp(held, now=True)
    # ``jobs`` warm worker processes (each takes the stamp of ``held`` once); with one job, this process
    workers = pool(suite.jobs, held) if suite.jobs > 1 else None
    with (
        recordings.held(held),
        contextlib.nullcontext() if workers is None else workers,
        concurrent.futures.ThreadPoolExecutor(threads_wanted) as threads,
    ):
        batch = _batch(workers)
        _recorded_together(suite, folders, batch, phase)
        futures = {
            threads.submit(_one_folder, suite, relative, batch, told): relative for relative in folders
        }
        try:
            for future in concurrent.futures.as_completed(futures):
                _collect(future.result(), futures[future], folders, result, told)
        except BaseException:  # interrupted: the folders still running end without a new worker
            if workers is not None:
                workers.stop()
            raise
    for folder in made:  # those left empty: a folder that wrote nothing
        with contextlib.suppress(OSError):
            folder.rmdir()
    result.changed = _forgot_if_changed(cache, held, stamp_before, kept_before)
    return result


def _forgot_if_changed(
    cache: Path | None, held: list[Path], stamp_before: str, kept_before: set[str]
) -> bool:
    """Whether the tree changed while the suite was recorded; if so, what it recorded is forgotten."""
    if cache is None or not held or recordings.stamp(held, now=True) == stamp_before:
        return False
    recordings.forget(cache, kept_before)
    return True


def _recorded_together(
    suite: Suite,
    folders: dict[Path, list[Path]],
    batch: Callable[[list[Any]], list[Any]],
    phase: Callable[[str], None],
) -> None:
    """Every test recorded together into the cache (``together.py``: miles' helpers loaded once per
    sandbox), then, for ``LOOKS`` rounds, what the imports look up next that it lacks (the other
    platform's side, a switch's value, a checkpoint's config), while a round has enough of it to
    keep the sandboxes busy (``FEWEST_PER_SANDBOX``). Only time is saved: a recording not made here
    is made alone by its import."""
    options = suite.options
    if options.miles_root is None or options.cache is None or options.trust_checkout:
        return
    conventions, root = bundled.conventions(), options.miles_root.resolve()
    env = together.env_of({}, conventions.secrets, tuple(conventions.verifiers), root)
    outputs = {
        test: options.output / relative / case_file(test)
        for relative, tests in folders.items()
        for test in tests
    }
    looked = [test for test in outputs if not test.is_symlink()]
    wanted = [together.Wanted.of(test, env) for test in looked]
    tried: set[together.Wanted] = set()
    sandboxes = SANDBOXES * suite.jobs
    for look in range(LOOKS + 1):
        wanted = [one for one in dict.fromkeys(wanted) if one not in tried]
        if not wanted or (look and len(wanted) < FEWEST_PER_SANDBOX * sandboxes):
            return
        tests = counted(len({one.script for one in wanted}), "test")
        runs = f" (look {look}: {counted(len(wanted), 'run')})" if look else ""
        phase(f"recording {tests} together{runs}")
        tried.update(wanted)
        kept = together.record(wanted, root, options.cache, conventions.secrets, options.timeout, sandboxes)
        if look == LOOKS or not kept:
            return
        looked = list(dict.fromkeys(one.script for one in wanted))  # a test that lacked several: one look
        asked = [
            together.Look(request_of(options, (test, outputs[test], None, options.hardware)))
            for test in looked
        ]
        wanted = [one for found in batch(asked) for one in found if isinstance(one, together.Wanted)]


def _collect(
    found: FolderImported | str,
    relative: Path,
    folders: dict[Path, list[Path]],
    result: SuiteImported,
    told: Progress,
) -> None:
    if isinstance(found, FolderImported):
        result.folders[relative] = found
        return
    result.failed[relative] = found
    for test in folders[relative]:
        if test not in result.outcomes:
            told(test, "refused", found.splitlines()[0])
        elif result.outcomes[test][0] == "imported":  # it imported, but its folder could not be written
            why = found.splitlines()[0]
            result.outcomes[test] = ("refused", f"not written: its folder wrote nothing: {why}")


def _made_folders(output: Path, folders: list[Path]) -> list[Path]:
    """Every folder's output folder made before any import, so that each finds its parent (returned:
    the folders made, the deepest first, for those left empty to be taken away again)."""
    wanted = [output / relative for relative in folders]
    chains = [(folder, *folder.parents) for folder in wanted]
    made = {p for chain in chains for p in chain if p.is_relative_to(output) and not p.exists()}
    for folder in wanted:
        folder.mkdir(parents=True, exist_ok=True)
    return sorted(made, key=lambda path: len(path.parts), reverse=True)  # the deepest first


def _one_folder(
    suite: Suite, relative: Path, batch: Callable[[list[Request]], list[Any]], told: Progress
) -> FolderImported | str:
    """One folder's import (folder.py), or why it wrote nothing."""
    output = suite.options.output / relative
    request = replace(suite.options, tests=suite.tests / relative, output=output, batch=batch, progress=told)
    try:
        return import_folder(request)
    except RunMatrixError as exc:
        return str(exc.problems[0].message if isinstance(exc, SpecError) else exc)


def _batch(workers: Workers | None) -> Callable[[list[Request]], list[Any]]:
    """The imports of one step (or looks up, ``together.Look``): side by side in ``workers``, else
    one by one here."""

    def batch(requests: list[Request]) -> list[Any]:
        if workers is None:
            return [answer(request) for request in requests]
        futures = [workers.submit(request) for request in requests]
        return [future.result() for future in futures]

    return batch
