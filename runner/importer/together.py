"""together: many tests of one checkout recorded in one sandbox, each kept as if recorded alone.

A recording costs about a second, nearly all of it loading miles' helpers from the checkout (Ray,
pydantic and miles' own modules); the script itself runs in milliseconds. ``harness.py --each``
loads them once and forks once per script; each fork runs its script exactly as a recording of it
alone runs after that load. So a suite import first records its tests together, in ``jobs``
sandboxes side by side, into the recordings cache (``recordings.py``), under the very key
``capture.record`` looks each one up by: the imports that follow find them there.

The recordings of one sandbox share run-matrix's own variables (the platform's CI environment goes
with them: a side's build is one); the rest of a recording's environment, the test's switches and the
functions it records as calls, its fork sets itself, before its script runs. A script recorded again
with functions of its own as calls (``capture._with_calls_recorded``) is so recorded once more in each
round after: each of its runs is a recording of its own, and its import looks up the next one.

What a fork records is kept only where it is what a recording alone would have kept:

* the script lies in the checkout (a script outside it sees other paths);
* its folder holds no module the load looked up (alone, the script's folder is on the path while
  miles' helpers load, and such a module would have been loaded instead);
* the load read, set or took away none of the variables its fork set, nor listed the environment
  (alone, the load would have seen them; compiled code's own reads are not seen, and none of miles'
  reads a test's switch), and ran no module of a function its fork records as a call (alone, it is
  recorded from the interpreter's start);
* its fork ended within ``FORK_LIMIT_S`` and left a whole trace, with nothing in it from
  the load (the trace would name the load instead of the script).

Anything else is left to ``capture.record``, which records it alone: this only saves time.

The tests of one sandbox share it: past the guards (which record writes and do none), one of them
could leave a file in the sandbox's ``/tmp`` for the next, or write over the trace an earlier one
left in the results folder (a fork holds no other fork's open file; by its path, it could). They
are one checkout's code: what it does to its own recordings, its author could write into its tests,
and each recording is kept under a key of that whole checkout's bytes. A fork that ends the process
that forks it leaves the scripts after it to recordings alone.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import sandbox
from runner.errors import RunMatrixError
from runner.importer import Request, capture, harness, recordings
from runner.knowledge import checkout
from runner.spec import documents

MOST = 48  # scripts of one sandbox, at the most (each holds two files of its results folder open)
# scripts of one sandbox, at the least, where a group has more: a sandbox's load of miles' helpers
# costs about what ten forks do (0.5 CPU seconds with Ray installed, a fork 0.02-0.2), so a batch of
# fewer only adds loads (miles main: a switch's 4 tests made 4 sandboxes of 1)
FEWEST = 8
LOAD_S = 30.0  # wall seconds the load of miles' helpers may take, besides each script's
FORK_LIMIT_S = 10.0  # wall seconds of a script's fork (one runs in milliseconds; past it: alone)
_OWN = "RUN_MATRIX_"  # what run-matrix's own variables are named (capture.SANDBOX_VARIABLES, missing.py's)


@dataclass(frozen=True)
class Wanted:
    """One recording an import looked up and the cache did not hold."""

    script: Path
    env: tuple[tuple[str, str], ...]  # its whole environment, sorted (capture.inputs, what the import added)

    @classmethod
    def of(cls, script: Path, env: Mapping[str, str]) -> Wanted:
        return cls(script, tuple(sorted(env.items())))


def env_of(
    switches: Mapping[str, str], secrets: Sequence[str], verifiers: Sequence[str], miles_root: Path
) -> dict[str, str]:
    """The environment ``capture.record`` gives a test of ``miles_root`` with ``switches`` set."""
    return capture.inputs(miles_root / "test.py", switches, secrets, miles_root, verifiers)[1]


def record(
    wanted: Sequence[Wanted],
    miles_root: Path,
    cache: Path,
    secrets: Sequence[str],
    timeout: float = capture.TIMEOUT_S,
    jobs: int = 1,
) -> set[Wanted]:
    """Record each of ``wanted`` (tests of the checkout ``miles_root``) into ``cache`` as
    ``capture.record`` would alone, ``jobs`` sandboxes at once; the ones kept."""
    miles_root = miles_root.resolve()
    groups: dict[tuple[tuple[str, str], ...], list[Wanted]] = {}
    for one in dict.fromkeys(wanted):
        if miles_root in one.script.resolve().parents:
            groups.setdefault(_sandbox_of(one.env), []).append(one)
    batches = [batch for group in groups.values() for batch in _split(group, jobs)]
    kept: set[Wanted] = set()
    with concurrent.futures.ThreadPoolExecutor(max(jobs, 1)) as threads:
        for found in threads.map(
            lambda batch: _recorded(batch, miles_root, cache, secrets, timeout), batches
        ):
            kept |= found
    return kept


def _sandbox_of(env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """What the recordings of one sandbox share: run-matrix's own variables, all but the calls to
    record (which a fork records from its start). A side's build is one of them, so the platform's
    CI variables differ only from one sandbox to another; what else differs, each fork sets itself:
    the test's switches."""
    return tuple(
        (name, value) for name, value in env if name.startswith(_OWN) and name != harness.RECORDED_CALLS
    )


def _split(group: list[Wanted], jobs: int) -> Iterator[list[Wanted]]:
    """``group`` in up to ``jobs`` batches of near one size, none of fewer than ``FEWEST`` scripts
    where it can be helped (more where one would pass ``MOST``), dealt round: the tests of one
    folder, often alike in cost (pytest's own start, say), go to each."""
    count = max(min(jobs, len(group) // FEWEST), -(-len(group) // MOST), 1)
    for start in range(count):
        yield group[start::count]


def _recorded(
    batch: list[Wanted], miles_root: Path, cache: Path, secrets: Sequence[str], timeout: float
) -> set[Wanted]:
    keys: dict[Wanted, str] = {}
    reads = [miles_root]
    try:
        for one in batch:
            argv, _, reads = capture.inputs(one.script.resolve(), {}, secrets, miles_root, ())
            parts = capture.key_parts(argv, dict(one.env), timeout, False, reads)
            entry_key, before = recordings.key(parts, reads)
            if recordings.load(cache, entry_key) is None:
                keys[one] = entry_key
    except (recordings.Unhashable, OSError):
        return set()
    if not keys:
        return set()
    env = dict(set.intersection(*(set(one.env) for one in keys)))  # the sandbox's: every fork's
    its_own = [{name: value for name, value in one.env if env.get(name) != value} for one in keys]
    env[harness.EACH_ENVIRONMENT] = json.dumps(its_own)
    scripts = [one.script.resolve() for one in keys]
    each = [harness.EACH, str(miles_root), str(FORK_LIMIT_S), *map(str, scripts)]
    argv = [sys.executable, "-I", "-B", str(capture.HARNESS), *each]
    wall = LOAD_S + len(scripts) * FORK_LIMIT_S
    limits = sandbox.Limits(wall_s=wall, cpu_s=capture.cpu_seconds(wall), results_files=2 * len(scripts) + 2)
    try:
        done = sandbox.run(argv, reads=reads, cwd=miles_root, env=env, limits=limits, secret_names=secrets)
    except RunMatrixError:
        return set()  # the recordings alone say what is wrong
    with contextlib.suppress(recordings.Unhashable, OSError):
        if recordings.stamp(reads) != before:
            return set()  # the checkout changed meanwhile: nothing is kept
    kept, tree = set(), checkout.Tree.at(miles_root)
    for number, (one, entry_key) in enumerate(keys.items()):
        found = _as_alone(done, number, one.script.resolve(), its_own[number], secrets, tree)
        if found is not None:
            recordings.store(cache, entry_key, found)
            kept.add(one)
    return kept


def _as_alone(
    done: sandbox.Outcome,
    number: int,
    script: Path,
    its_own: dict[str, str],
    secrets: Sequence[str],
    tree: checkout.Tree,
) -> dict[str, Any] | None:
    """The recording of fork ``number`` (which set ``its_own`` environment) as ``capture.record``
    keeps one made alone; None where it may not be the same (see the module's docstring)."""
    try:
        loaded = documents.json_data(done.files.get("loaded.json", b"{}"), sandbox.Limits().results)
        looked_up = set(loaded["looked_up"])
        touched = bool(its_own) and (loaded["listed"] or not set(its_own).isdisjoint(loaded["environment"]))
        text = done.files[f"{number}.json"]
        if (
            loaded["failed"]
            or touched
            or harness.BEFORE_THE_SCRIPT.encode() in text
            or _shadows(tree, script.parent, looked_up)
        ):
            return None
        trace = capture.read_trace(text, secrets)
    except (KeyError, TypeError, ValueError, AttributeError, OSError):
        return None  # no whole trace: killed, or the script wrote over it
    printed = done.files.get("loaded.out", b"") + done.files.get(f"{number}.out", b"")
    output = sandbox.shown(printed, False, sandbox.Limits(), secrets)
    return {"trace": trace, "output": output}


def _shadows(tree: checkout.Tree, folder: Path, looked_up: set[str]) -> bool:
    """Whether ``folder`` (of the checkout ``tree``) holds a module or package of a name ``looked_up``;
    listed through the door (a checkout's folder is a stranger's)."""
    suffixes = (".py", ".pyc", ".so", ".pyd")
    try:
        _, files, folders = next(tree.walk(folder.relative_to(tree.root).as_posix()))
    except (checkout.CheckoutError, StopIteration, ValueError):
        return True  # not listed: a recording alone says what is there
    names = [*folders, *(name.partition(".")[0] for name in files if name.endswith(suffixes))]
    return not looked_up.isdisjoint(names)


@dataclass(frozen=True)
class Look:
    """A request to find the recordings an import looks up next that the cache lacks (``next_wanted``)."""

    request: Request


def next_wanted(look: Look) -> tuple[Wanted, ...]:
    """The recordings ``look.request``'s import looks up next that the cache lacks (``capture.each_of``:
    those it can ask at once); none when it lacks none, or when the import is refused before (its real
    import says why). A tuple, never None: a worker that answers None has died (``workers.py``)."""
    from runner.importer import import_test

    with capture.looking():
        try:
            import_test(look.request)
        except capture.NotKept as lacking:
            return tuple(Wanted.of(look.request.script, env) for env in lacking.envs)
        except RunMatrixError:
            return ()
    return ()
