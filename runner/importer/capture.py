"""capture: run a test script once in the import sandbox and read back what it did.

The sandbox (``harness.py``) is a fresh interpreter with a fixed environment: only the variant
switches being tried, and each secret the launch conventions name set to a stand-in value that
is turned back into a ``${NAME}`` reference here — a real secret never enters the sandbox, and
none can leak into a spec. Everything the script would have done arrives as data; anything the
recorder could not stand in for is an error that names the script's line.
"""

from __future__ import annotations

import json
import math
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import sandbox
from runner.errors import EnvironmentProblem, Location, RunMatrixError
from runner.importer import launch_reads, notes, recorded_calls
from runner.importer.events import Event, location, refused
from runner.importer.knowledge import knowledge
from runner.importer.notes import Note
from runner.knowledge import own_checks
from schemas import calls

HARNESS = Path(__file__).with_name("harness.py")
TIMEOUT_S = 60.0
_STAND_IN = "run-matrix-secret-{}"
RECORDER_MILES_VERSION = "dc8b499b"  # whose command helpers recorder.py stands in for
# what the sandbox's environment holds besides switches and secrets: never a switch of the script's
CHECKPOINTS_VARIABLE = "RUN_MATRIX_CHECKPOINTS"  # what downloads hold (the harness takes it out at once)
VERIFIERS_VARIABLE = "RUN_MATRIX_VERIFIERS"  # the checks it records (the harness takes it out at once)
RECORDED_CALLS_VARIABLE = "RUN_MATRIX_RECORDED_CALLS"  # functions it records as calls (likewise)
CPU_LIMIT_SIGNALS = (signal.SIGXCPU, signal.SIGKILL)  # what ends a child at its CPU time limit
CPU_HEADROOM_S = 2  # CPU seconds a script may use beyond its wall clock's
PYTHON_VERSION = "{}.{}".format(*sys.version_info)  # the sandbox runs the script with this interpreter
SANDBOX_VARIABLES = frozenset(
    {
        *sandbox.BASE_ENV,
        "HOME",
        sandbox.OUT_VARIABLE,
        CHECKPOINTS_VARIABLE,
        VERIFIERS_VARIABLE,
        RECORDED_CALLS_VARIABLE,
    }
)


@dataclass(frozen=True)
class Check:
    """One call of a check of the checkout's own after a launch (the spec's ``verify:``)."""

    call: str  # module.function
    args: dict[str, Any]  # as the test gave them, JSON values
    at: Location
    launched_by: tuple[str, ...] = ()  # the functions it launched by, which do nothing when it checks


@dataclass(frozen=True)
class Call:
    """One ``execute_train`` call: its arguments, the commands it runs, the script's flag variables."""

    args: dict[str, Any]
    commands: tuple[str, ...]
    variables: dict[str, str]
    function: str  # the function that called it
    parameters: dict[str, Any]  # that function's arguments
    at: Location
    prepare: tuple[Event, ...] = ()  # what the script ran before it, since its start
    checks: tuple[Check, ...] = ()  # the checks of its output the script called after it


@dataclass(frozen=True)
class Registration:
    """One CI registration of the test: ``register_*_ci`` (kind ci) or ``register_ci_gate`` (kind gate)."""

    kind: str  # ci | gate
    name: str  # register_cuda_ci, register_rocm_ci, register_cpu_ci, register_ci_gate
    args: dict[str, Any]  # bound to miles' signature; a gate's omitted fields filled from GATE_DEFAULTS
    defaulted: tuple[str, ...]  # the gate fields GATE_DEFAULTS filled
    at: Location


@dataclass(frozen=True)
class Run:
    """One run of the script under the recorder."""

    switches: dict[str, str]  # the environment variables set for this run
    prepare: tuple[Event, ...]  # what ran before the first call
    calls: tuple[Call, ...]
    wandb: tuple[str, ...]  # what get_default_wandb_args returned
    notes: tuple[Note, ...]
    env_reads: dict[str, Location]
    root: str  # the miles checkout as the recorded commands name it
    registrations: tuple[Registration, ...] = ()


def record(
    script: Path,
    switches: Mapping[str, str],
    secrets: Sequence[str],
    miles_root: Path | None = None,
    timeout: float = TIMEOUT_S,
    trust: bool = False,
    verifiers: Sequence[str] = (),
) -> Run:
    """Run ``script`` in the sandbox with ``switches`` set; nothing it would do is done."""
    script = script.resolve()
    miles_root = miles_root.resolve() if miles_root else None
    env = {**{name: _STAND_IN.format(name) for name in secrets}, **switches}
    env[CHECKPOINTS_VARIABLE] = json.dumps(knowledge().checkpoints)
    env[VERIFIERS_VARIABLE] = json.dumps(list(verifiers))
    argv = [sys.executable, "-I", "-B", str(HARNESS), str(script), *([str(miles_root)] if miles_root else [])]

    # the runs of one recording share ``timeout``: a script that makes import run it again
    # (recorded_calls.MAX_RUNS) gets no more time than one that runs once
    deadline = time.monotonic() + timeout

    def sandboxed(env: dict[str, str]) -> tuple[dict[str, Any], str]:
        left = deadline - time.monotonic()
        done = sandbox.run(
            argv,
            reads=[script.parent, *([miles_root] if miles_root else [])],
            cwd=miles_root or script.parent,
            env=env,
            limits=sandbox.Limits(wall_s=max(left, 0.0), cpu_s=cpu_seconds(max(left, 0.0))),
            trust=trust,
            secret_names=secrets,
        )
        again = RECORDED_CALLS_VARIABLE in env
        trace = json.loads(_trace_text(script, done, timeout, again))
        return _references(trace, secrets, _home(trace.pop("home", ""))), done.output

    try:
        trace, output = _with_calls_recorded(sandboxed, env)
        _place_reads_and_calls(trace)
        return _run(script, dict(switches), trace, output)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        # the script runs in the recorder's interpreter and can reach its trace: what comes out of the
        # sandbox is read as data a script may have written, and one that is not the recorder's refused
        raise refused(
            Location(script),
            f"left a record the recorder did not write ({type(error).__name__}: {error}): does it change"
            " run-matrix's recorder in its interpreter?",
        ) from None


Sandboxed = Callable[[dict[str, str]], tuple[dict[str, Any], str]]  # one run: its trace, its output


def _with_calls_recorded(sandboxed: Sandboxed, env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The script's run, again with each function of the test's own that import records as a call
    (``own_calls.py``) as long as a run finds more (``recorded_calls.MAX_RUNS`` runs at most)."""
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


def _trace_text(script: Path, done: sandbox.Outcome, timeout: float, again: bool = False) -> bytes:
    """What the harness wrote, once it finished; refused when the script ran out of its time (that of
    all its runs together, when this one ran ``again`` with functions recorded as calls)."""
    if done.timed_out:
        runs = " in all its runs together (it ran again with functions of its own recorded as calls):"
        asked = f"{runs} does it wait for something?" if again else " (does it wait for something?)"
        raise refused(Location(script), f"did not finish within {timeout:g} s under the recorder{asked}")
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


def _run(script: Path, switches: dict[str, str], trace: dict[str, Any], output: str) -> Run:
    if trace["refusal"]:
        raise refused(location(trace["refusal"]["at"]), trace["refusal"]["reason"])
    events = trace["events"]
    if trace["failure"]:
        raise _failed(trace["failure"], events, output)
    launches = [i for i, e in enumerate(events) if e["kind"] == "train"]
    if not launches:
        raise refused(
            Location(script),
            "never calls execute_train when run as `python SCRIPT`: there is no launch to import",
        )
    after = [e for e in events[launches[-1] :] if e["kind"] in ("command", "helper")]
    late = [e for e in after if e["kind"] == "helper" or not notes.resets_node(e["command"])]
    if late:
        raise refused(
            location(late[0]["at"]),
            f"runs {_what(late[0])} after its last execute_train; a spec runs nothing after the launch",
        )
    # a launch's prepare is everything run before it: on a fresh node each cell runs all of it
    kept = _kept_writes(events, launches[-1], trace["root"])
    ran = [
        (i, _event(e))
        for i, e in enumerate(events)
        if e["kind"] in ("command", "helper", "prepare-call") or i in kept
    ]
    checks = _checks(events, launches)
    launched = tuple(_call(events[i], tuple(event for j, event in ran if j < i), checks[i]) for i in launches)
    return Run(
        switches,
        launched[0].prepare,
        launched,
        tuple(e["text"] for e in events if e["kind"] == "wandb"),
        tuple(
            notes.of_event(e) if e["kind"] != "write" else notes.of_write(e, i > launches[-1], trace["root"])
            for i, e in enumerate(events)
            if e["kind"] in notes.NOTED or (e["kind"] == "write" and i not in kept)
        )
        + _session_notes(launched, Path(trace["root"]))
        + tuple(filter(None, (notes.interpreter_note(events[i], PYTHON_VERSION) for i in launches)))
        + tuple(notes.reset_note(e["command"], location(e["at"])) for e in after),
        {name: location(at) for name, at in trace["env_reads"].items()},
        trace["root"],
        tuple(
            Registration(e["kind"], e["name"], e["args"], tuple(e["defaulted"]), location(e["at"]))
            for e in events
            if e["kind"] in ("ci", "gate")
        ),
    )


def _failed(failure: dict[str, Any], events: list[dict[str, Any]], output: str) -> RunMatrixError:
    """Why a script that raised cannot be imported: the environment's fault, what its own launch
    would have written, or its exception (before or after launching)."""
    if failure.get("environment"):
        return EnvironmentProblem(failure["reason"])
    missing = failure.get("missing")
    read_own_output = launch_reads.refusal(missing, events) if missing else None
    if read_own_output:
        return refused(location(failure["at"]), read_own_output)
    tail = "\n".join(output.strip().splitlines()[-5:])
    launched = [e for e in events if e["kind"] == "train"]
    after = (
        f" after launching (line {launched[-1]['at'][1]}), using what the run left (to check it, or for a"
        " later launch): a spec holds launches, not what follows from their output"
        if launched
        else " under the recorder (commands run nothing there and return no output)"
    )
    recorded = [f"{e['function']}()" for e in events if e["kind"] == "prepare-call"]
    if recorded:  # what such a function returns or leaves is not there: say so, or the failure puzzles
        after += (
            f" ({', '.join(recorded)}, which {'run' if len(recorded) > 1 else 'runs'} what no prepare step"
            " runs, became a prepare step of kind call and did not run here: what it leaves behind is not"
            " there)"
        )
    return refused(
        location(failure["at"]),
        failure["reason"] + after + (f"; its last output:\n{tail}" if tail else ""),
    )


def _call(event: dict[str, Any], prepare: tuple[Event, ...], checks: tuple[Check, ...]) -> Call:
    caller = event["caller"]
    return Call(
        event["args"],
        tuple(event["commands"]),
        event["variables"],
        caller["function"],
        caller["parameters"],
        location(event["at"]),
        prepare,
        checks,
    )


def _checks(events: list[dict[str, Any]], launches: list[int]) -> dict[int, tuple[Check, ...]]:
    """The checks of each launch: those called after it, before the next (a check that compares two
    launches' output follows the second; the cells of a spec run in order, on one cluster)."""
    found: dict[int, list[Check]] = {i: [] for i in launches}
    for index, event in enumerate(events):
        if event["kind"] != "verify":
            continue
        before = [i for i in launches if i < index]
        if not before:
            raise refused(
                location(event["at"]),
                f"calls {calls.function_of(event['call'])}() before any execute_train: no run to check yet",
            )
        _not_fed_to_a_launch(event, [events[i] for i in launches if i > index])
        launched_by = tuple(event.get("launched_by", ()))
        found[before[-1]].append(Check(event["call"], event["args"], location(event["at"]), launched_by))
    return {i: tuple(checks) for i, checks in found.items()}


def _not_fed_to_a_launch(check: dict[str, Any], later: list[dict[str, Any]]) -> None:
    """A test's own function called between two launches of one function may prepare the second
    (a checkpoint's step read back); a spec holds it only as a check of the first."""
    again = [e for e in later if "flow" in check and e.get("flow") == check["flow"]]
    if again:
        raise refused(
            location(check["at"]),
            f"calls {calls.function_of(check['call'])}(), code of its own, between two launches of one"
            f" function (line {again[0]['at'][1]} launches again): what it does may feed that launch, which"
            " a spec's verify: cannot (a check runs after its cell's job)",
        )


def _session_notes(launched: Sequence[Call], root: Path) -> tuple[Note, ...]:
    """A test's own check that reads Ray's default session (``/tmp/ray/session_latest``): under
    miles it is the session execute_train just started; a cell's own Ray head keeps it elsewhere."""
    found_notes = []
    for check in (c for call in launched for c in call.checks if calls.is_own(c.call)):
        found = own_checks.read(root, check.call)
        if not isinstance(found, str) and found.ray_paths:
            found_notes.append(Note(notes.session_note(check.call, found.ray_paths), check.at))
    return tuple(dict.fromkeys(found_notes))


def _kept_writes(events: list[dict[str, Any]], last_launch: int, root: str) -> set[int]:
    """The files the test's own code writes before its last launch whose text a prepare step can
    hold: text of at most 64 KiB, outside the checkout (whose path a spec never names)."""
    return {
        i
        for i, e in enumerate(events[:last_launch])
        if e["kind"] == "write" and e["text"] is not None and not e["path"].startswith(f"{root}/")
    }


def _event(event: dict[str, Any]) -> Event:
    if event["kind"] == "prepare-call":
        return Event("call", event["function"], event["call"], event["args"], location(event["at"]))
    if event["kind"] == "write":
        return Event("write", "write", event["path"], {"text": event["text"]}, location(event["at"]))
    if event["kind"] == "command":
        return Event("command", event["helper"], event["command"], {}, location(event["at"]))
    return Event("helper", event["name"], "", event["args"], location(event["at"]))


def _what(event: dict[str, Any]) -> str:
    return f"`{event['command']}`" if event["kind"] == "command" else f"{event['name']}()"
