"""traced: what one run of a test script under the recorder did, read from its trace (``capture.py``
runs it and reads the trace back): its launches with the prepare before each and the checks after,
its CI registrations, its notes; or why it cannot be imported, at the script's line. Pure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import EnvironmentProblem, Location, RunMatrixError
from runner.importer import launch_reads, notes
from runner.importer.events import Event, location, refused
from runner.importer.notes import Note
from runner.knowledge import own_checks
from schemas import calls

UPSTREAM = "a line of the miles checkout's own code"
PYTHON_VERSION = "{}.{}".format(*sys.version_info)  # the sandbox runs the script with this interpreter


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


def of_trace(script: Path, switches: dict[str, str], trace: dict[str, Any], output: str) -> Run:
    """The run ``trace`` records, of ``script`` with ``switches`` set (``output``: what it printed);
    refused where it did what a spec cannot hold."""
    if trace["refusal"]:
        raise refused(location(trace["refusal"]["at"]), trace["refusal"]["reason"])
    events = trace["events"]
    if trace["failure"]:
        raise _failed(trace["failure"], events, output, trace["root"], _texts(trace.get("unknown_configs")))
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


def _texts(value: Any) -> list[str]:
    """A list of texts of the trace (which the script could have written): the texts of it, at most 8."""
    return [text for text in value if isinstance(text, str)][:8] if isinstance(value, list) else []


def _failed(
    failure: dict[str, Any], events: list[dict[str, Any]], output: str, root: str, unknown: Sequence[str] = ()
) -> RunMatrixError:
    """Why a script that raised cannot be imported: the environment's fault, what its own launch
    would have written, or its exception (before or after launching), with each ``config.json`` of a
    download it looked up whose content import did not know (``unknown``), which may be why."""
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
    deepest = failure.get("deepest")
    inside = ""
    if deepest and not launched:  # miles' own code raised, not the test's
        shown = os.path.relpath(deepest[0], root) if deepest[0].startswith(root + os.sep) else deepest[0]
        inside = f" at {shown}:{deepest[1]} ({UPSTREAM})"
    looked_up = "".join(f"; before, it {text}" for text in unknown)
    return refused(
        location(failure["at"]),
        failure["reason"] + inside + after + looked_up + (f"; its last output:\n{tail}" if tail else ""),
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
