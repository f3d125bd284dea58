"""capture: run a test script once in the import sandbox and read back what it did.

The sandbox (``harness.py``) is a fresh interpreter with a fixed environment: only the variant
switches being tried, and each secret the launch conventions name set to a stand-in value that
is turned back into a ``${NAME}`` reference here — a real secret never enters the sandbox, and
none can leak into a spec. Everything the script would have done arrives as data (``traced.py``
reads it); anything the recorder could not stand in for is an error that names the script's line.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import json
import math
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from runner import sandbox
from runner.errors import Location, RunMatrixError
from runner.importer import launch_reads, recorded_calls, recordings, run_ids, traced
from runner.importer.events import location, refused
from runner.importer.knowledge import knowledge
from runner.knowledge import checkpoints, mbridge
from runner.knowledge.checkout import Tree
from runner.sandbox.binds import script_reads
from runner.spec import documents

T = TypeVar("T")
U = TypeVar("U")
HARNESS = Path(__file__).with_name("harness.py")
TIMEOUT_S = 60.0
_STAND_IN = "run-matrix-secret-{}"
RECORDER_MILES_VERSION = "dc8b499b"  # whose command helpers recorder.py stands in for
# what the sandbox's environment holds besides switches and secrets: never a switch of the script's
CHECKPOINTS_VARIABLE = "RUN_MATRIX_CHECKPOINTS"  # what downloads hold (the harness takes it out at once)
VERIFIERS_VARIABLE = "RUN_MATRIX_VERIFIERS"  # the checks it records (the harness takes it out at once)
BUILD_VARIABLE = "RUN_MATRIX_BUILD"  # missing.py's: the platform whose build the stand-ins answer as
MBRIDGE_VARIABLE = "RUN_MATRIX_MBRIDGE"  # missing.py's: what mbridge's own registry holds, or why unknown
BUILD_QUESTIONS = frozenset({"torch.version.hip", "torch.version.cuda"})  # missing.py's BUILDS, asked
RECORDED_CALLS_VARIABLE = "RUN_MATRIX_RECORDED_CALLS"  # functions it records as calls (likewise)
CPU_LIMIT_SIGNALS = (signal.SIGXCPU, signal.SIGKILL)  # what ends a child at its CPU time limit
CPU_HEADROOM_S = 2  # CPU seconds a script may use beyond its wall clock's
SANDBOX_VARIABLES = frozenset(
    {
        *sandbox.BASE_ENV,
        "HOME",
        sandbox.OUT_VARIABLE,
        CHECKPOINTS_VARIABLE,
        VERIFIERS_VARIABLE,
        RECORDED_CALLS_VARIABLE,
        BUILD_VARIABLE,
        MBRIDGE_VARIABLE,
    }
)


class NotKept(Exception):
    """Raised while ``looking()``: the cache lacks recordings an import looked up (``envs``: their
    environments, each once), or (``envs`` empty) it holds every one the import looked up."""

    def __init__(self, envs: Sequence[dict[str, str]]) -> None:
        super().__init__(envs)
        self.envs = envs


_LOOKING = contextvars.ContextVar("looking", default=False)  # lasting state: importer/__init__.py says why


@contextlib.contextmanager
def looking() -> Iterator[None]:
    """Within it, a recording the cache lacks raises ``NotKept`` instead of being made."""
    token = _LOOKING.set(True)
    try:
        yield
    finally:
        _LOOKING.reset(token)


def all_looked_up() -> None:
    """An import's recordings are all made: while ``looking()``, it ends here (``NotKept(())``)."""
    if _LOOKING.get():
        raise NotKept(())


def each_of(makes: Iterable[Callable[[], T]]) -> list[T]:
    """What each of ``makes`` returns, in order: recordings none of which depends on another's. While
    ``looking()``, those the cache lacks are asked together (one ``NotKept``), not the first alone,
    so that a suite import records them in one round (``together.py``)."""
    made: list[T] = []
    lacking: list[dict[str, str]] = []
    for make in makes:
        try:
            made.append(make())
        except NotKept as missing:
            lacking += (env for env in missing.envs if env not in lacking)
    if lacking:
        raise NotKept(lacking)
    return made


def both(one: Callable[[], T], other: Callable[[], U]) -> tuple[T, U]:
    """``one()`` and ``other()``, as ``each_of`` makes them (of two types)."""
    first, second = each_of([one, other])
    return cast(T, first), cast(U, second)


def record(
    script: Path,
    switches: Mapping[str, str],
    secrets: Sequence[str],
    miles_root: Path | None = None,
    timeout: float = TIMEOUT_S,
    trust: bool = False,
    verifiers: Sequence[str] = (),
    cache: Path | None = None,
    hf_configs: Sequence[tuple[str, Path]] = (),
) -> traced.Run:
    """Run ``script`` in the sandbox with ``switches`` set; nothing it would do is done. With
    ``cache``, a recording of the same script seeing the same files is taken from there
    (``recordings.py``), and a new one kept there. A repo it downloads whose ``config.json``
    run-matrix does not ship is looked up in the user's Hugging Face cache, else ``hf_configs``
    (``knowledge/checkpoints.py``); found, the script is recorded again knowing it."""
    script = script.resolve()
    miles_root = miles_root.resolve() if miles_root else None
    argv, env, reads = inputs(script, switches, secrets, miles_root, verifiers)
    shipped = knowledge().checkpoints

    # the runs of one recording share ``timeout``: a script that makes import run it again
    # (recorded_calls.MAX_RUNS) gets no more time than one that runs once
    deadline = time.monotonic() + timeout

    def sandboxed(env: dict[str, str]) -> tuple[dict[str, Any], str]:
        left = deadline - time.monotonic()
        done = sandbox.run(
            argv,
            reads=reads,
            cwd=miles_root or script.parent,
            env=env,
            limits=sandbox.Limits(wall_s=max(left, 0.0), cpu_s=cpu_seconds(max(left, 0.0))),
            trust=trust,
            secret_names=secrets,
        )
        again = RECORDED_CALLS_VARIABLE in env
        try:
            return read_trace(_trace_text(script, done, timeout, again), secrets), done.output
        except documents.Unreadable as error:  # the script's code can write over the harness's trace
            reason = f"left a trace.json that does not parse as JSON: {error.reason}"
            raise refused(Location(script), reason) from None

    def kept(env: dict[str, str]) -> tuple[dict[str, Any], str]:
        """One run: the cache's (which takes none of ``timeout``), else made and kept."""
        parts = key_parts(argv, env, timeout, trust, reads)
        return _kept(cache, parts, reads, functools.partial(sandboxed, env))

    try:
        trace, output = _with_calls_recorded(kept, env)
        added = checkpoints.answered(_downloads(trace), shipped, dict(hf_configs), checkpoints.hub())
        if added:  # what the first run downloaded, now with the configs the user has of it
            env = {**env, CHECKPOINTS_VARIABLE: json.dumps({**shipped, **added})}
            trace, output = _with_calls_recorded(kept, env)
        _place_reads_and_calls(trace)
        return traced.of_trace(script, dict(switches), trace, output)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        # the script runs in the recorder's interpreter and can reach its trace: what comes out of the
        # sandbox is read as data a script may have written, and one that is not the recorder's refused
        raise refused(
            Location(script),
            f"left a record the recorder did not write ({type(error).__name__}: {error}): does it change"
            " run-matrix's recorder in its interpreter?",
        ) from None


def _mbridge_registry(miles_root: Path | None) -> dict[str, Any]:
    """What mbridge registers itself, for the stand-in's registry: shipped for the mbridge commit the
    checkout's images pin (``knowledge/mbridge.py``)."""
    shipped = knowledge().mbridge
    tree = Tree.at(miles_root) if miles_root else None
    return mbridge.answer(tree, shipped.commit, shipped.registered)


def _downloads(trace: dict[str, Any]) -> list[str]:
    """The Hub repos the recorded run downloaded (``hf download REPO --local-dir DIR``), as data the
    script could have written: only texts, at most ``checkpoints.MAX_REPOS`` of them."""
    found = trace.get("downloads")
    if not isinstance(found, list):
        return []
    return [repo for repo in found if isinstance(repo, str)][: checkpoints.MAX_REPOS]


def inputs(
    script: Path,
    switches: Mapping[str, str],
    secrets: Sequence[str],
    miles_root: Path | None,
    verifiers: Sequence[str],
) -> tuple[list[str], dict[str, str], list[Path]]:
    """What a recording of ``script`` (resolved) runs, in which environment, seeing which paths."""
    env = {**{name: _STAND_IN.format(name) for name in secrets}, **switches}
    env[CHECKPOINTS_VARIABLE] = json.dumps(knowledge().checkpoints)
    env[VERIFIERS_VARIABLE] = json.dumps(list(verifiers))
    env[MBRIDGE_VARIABLE] = json.dumps(_mbridge_registry(miles_root))
    argv = [sys.executable, "-I", "-B", str(HARNESS), str(script), *([str(miles_root)] if miles_root else [])]
    return argv, env, script_reads(script, miles_root)


def key_parts(
    argv: list[str], env: dict[str, str], timeout: float, trust: bool, reads: list[Path]
) -> dict[str, Any]:
    """What a recording's cache key is made of, besides the files it sees (``recordings.key``)."""
    return {"argv": argv, "env": env, "timeout": timeout, "trust": trust, "reads": [str(p) for p in reads]}


def read_trace(text: bytes, secrets: Sequence[str]) -> dict[str, Any]:
    """The trace the harness wrote, its stand-in secrets and HOME written back as references;
    :class:`documents.Unreadable` when it is not a trace (the results folder is the script's too)."""
    trace = documents.json_data(text, sandbox.Limits().results)
    if not isinstance(trace, dict):
        raise documents.Unreadable(f"a trace is a JSON object, not {type(trace).__name__}")
    found: dict[str, Any] = _references(trace, secrets, _home(trace.pop("home", "")))
    return found


def _kept(
    cache: Path | None,
    parts: dict[str, Any],
    reads: list[Path],
    recorded: Callable[[], tuple[dict[str, Any], str]],
) -> tuple[dict[str, Any], str]:
    """``recorded()``, or what the cache kept of it for these inputs. Only a recording that ran to
    its end is kept (a refusal raises), and only when nothing it could see changed meanwhile."""
    if cache is None:
        return recorded()
    try:
        entry_key, before = recordings.key(parts, reads)
    except (recordings.Unhashable, OSError):
        return recorded()
    found = recordings.load(cache, entry_key)
    if found is not None and isinstance(found.get("trace"), dict) and isinstance(found.get("output"), str):
        return copy.deepcopy(found["trace"]), found["output"]
    if _LOOKING.get():
        raise NotKept([parts["env"]])
    trace, output = recorded()
    with contextlib.suppress(recordings.Unhashable, OSError):
        if recordings.stamp(reads) == before:
            recordings.store(cache, entry_key, {"trace": trace, "output": output})
    return trace, output


Sandboxed = Callable[[dict[str, str]], tuple[dict[str, Any], str]]  # one run: its trace, its output


def _with_calls_recorded(sandboxed: Sandboxed, env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The script's run, again with each function of the test's own that import records as a call
    (``own_calls.py``) as long as a run finds more (``recorded_calls.MAX_RUNS`` runs at most). Each run
    is one recording of its own environment, kept by it: a suite records a chain's runs together,
    a round each (``together.py``)."""
    first = trace, output = sandboxed(env)
    recorded: list[recorded_calls.Recorded] = []
    for _ in range(recorded_calls.MAX_RUNS - 1):
        more = recorded_calls.to_record(trace, recorded)
        if not more:
            break
        recorded += more
        trace, output = sandboxed({**env, RECORDED_CALLS_VARIABLE: json.dumps(recorded)})
    if not any(e["kind"] == "train" for e in trace["events"]) and not (trace["refusal"] or trace["failure"]):
        return first  # a function that lists a download launched too: the first run says why
    return trace, output


def _place_reads_and_calls(trace: dict[str, Any]) -> None:
    """Each value read at launch as its reference, each recorded call in its place (in the events);
    refused where a read cannot be held. Nothing to place after a refusal or an environment fault."""
    failure = trace["failure"]
    if trace["refusal"] or (failure and failure.get("environment")):
        return
    unread = launch_reads.substitute(trace["events"], failed=bool(failure))
    if unread is not None:
        raise refused(location(unread[0]), unread[1])
    recorded_calls.attach(trace["events"])
    run_ids.place(trace["events"])


def _trace_text(script: Path, done: sandbox.Outcome, timeout: float, again: bool = False) -> bytes:
    """What the harness wrote, once it finished; refused when the script ran out of its time (that of
    all its runs together, when this one ran ``again`` with functions recorded as calls)."""
    if done.timed_out:
        runs = " in all its runs together (it ran again with functions of its own recorded as calls):"
        asked = f"{runs} does it wait for something?" if again else " (does it wait for something?)"
        raise refused(Location(script), f"did not finish within {timeout:g} s under the recorder{asked}")
    if done.results_problem:  # what the script did to the recorder's one results folder
        raise refused(Location(script), done.results_problem)
    text = done.files.get("trace.json")
    if not text and _ended_by_its_cpu_limit(done.returncode):
        raise refused(
            Location(script),
            f"used up its CPU time under the recorder (at most {cpu_seconds(timeout)} s; does it compute"
            " without end, or spin waiting for something?)",
        )
    if not text:  # missing, or empty: the harness never wrote it
        raise RunMatrixError(
            f"the import sandbox failed on {script} (exit status {done.returncode}):\n{done.output[-2000:]}"
        )
    return text


def cpu_seconds(timeout: float) -> int:
    """The CPU time a script may use: past its wall clock, so that one thread running flat out meets
    the wall clock first however busy the machine (the CPU limit is for many threads spinning)."""
    return math.ceil(timeout) + CPU_HEADROOM_S


def _ended_by_its_cpu_limit(returncode: int) -> bool:
    """SIGXCPU at the soft CPU limit, SIGKILL at the hard one: a signal's negative number, or how
    bubblewrap reports a child that a signal ended (128 + N)."""
    return -returncode in CPU_LIMIT_SIGNALS or returncode - 128 in CPU_LIMIT_SIGNALS


def _home(home: str) -> re.Pattern[str] | None:
    """The sandbox's private ``HOME`` as a whole path or a path's start (``/tmp/home/ckpt``, not
    ``/tmp/homework``): what the test makes of its home (``os.environ["HOME"]``, ``Path.home()``,
    ``~``) was written into the spec as the sandbox's folder, which no node has."""
    if not home.strip("/"):
        return None
    return re.compile(re.escape(home.rstrip("/")) + r"(?=$|/|[\s'\"=:,;])")


def _references(data: Any, secrets: Sequence[str], home: re.Pattern[str] | None = None) -> Any:
    """The trace with every stand-in secret written back as a ``${NAME}`` reference, and the sandbox's
    ``HOME`` as ``${HOME}`` (where the spec runs, the home of whoever runs it, as the test's was)."""
    if isinstance(data, str):
        for name in secrets:
            data = data.replace(_STAND_IN.format(name), f"${{{name}}}")
        return home.sub("${HOME}", data) if home else data
    if isinstance(data, list):
        return [_references(item, secrets, home) for item in data]
    if isinstance(data, dict):
        return {key: _references(value, secrets, home) for key, value in data.items()}
    return data
