"""recorded_calls: which functions of the test's own import records as calls (``own_calls.py``,
in the sandbox), and what the calls recorded become in the spec.

From one run's trace, ``to_record`` finds the functions to record in the next run:

* each top-level function of the test's code that runs, before the first launch, a command no
  prepare step runs (nor miles' clean-up), and that leads to no launch: a prepare step of kind call;
* the function the launching code called that started a thread still running at the launch: a
  ``launch.before_submit`` hook;
* the function that launched and then reads what its launches wrote, in code of its own (miles'
  router test compares two launches' dumps in ``execute()``): a ``verify:`` entry calling it again
  with the functions it launched by doing nothing (``launched_by``), recorded once its launches are.

``attach`` then places the second run's calls, in place: each beside hook goes into the
``before_submit`` of the launch it runs beside, with the one method the test calls on what it
returned after that launch as its ``stop``; each attribute the test reads of it, a digit stand-in in
the sandbox, must reach only ``verify:`` arguments of that launch's checks, as a whole value, and
becomes ``${hook:FUNCTION.ATTRIBUTE}`` there; what each prepare call returned goes into the flags it
reached (``prepared_results.py``). Anything else is refused with the reason. Pure.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from runner.importer import launch_reads, notes, prepare, prepared_results
from runner.importer.events import location, refused
from runner.importer.returned import ONLY_VERIFY

MAX_RUNS = 3  # runs of a script: each may find a function to record that the one before could not reach


Recorded = dict[str, Any]  # file, function, role, why, launched_by (a replay's)


def to_record(trace: dict[str, Any], known: list[Recorded]) -> list[Recorded]:
    """Each function ``trace``'s run shows is to be recorded as a call, and not in ``known`` yet
    (``why``: the first command no step runs, the thread it starts, the launch output it reads)."""
    events = trace["events"]
    launching = [function[:2] for e in events if e["kind"] == "train" for function in e["within"]]
    found: list[Recorded] = []
    for event in events:
        if event["kind"] == "train":
            break
        if event["kind"] != "command" or not event["within"] or notes.resets_node(event["command"]):
            continue
        file, name = _function(event["within"][0])
        if [file, name] not in launching and not prepare.runs_a_step(event["command"], trace["root"]):
            why = f"runs `{_program(event['command'])}`, which no prepare step runs"
            found.append(_recorded(file, name, "prepare", why))
    refusal = trace["refusal"] or {}
    if refusal.get("lists"):  # what it makes of the download's files is the node's affair
        file, name = _function(refusal["lists"][0])
        folder, repo = refusal["listed"]
        why = f"lists {folder}, which `hf download {repo}` would have written"
        why += " (import does not know which files the repo holds)"
        found.append(_recorded(file, name, "prepare", why))
    if refusal.get("beside"):
        file, name = _function(refusal["beside"])
        found.append(_recorded(file, name, "beside", f"starts a thread ({refusal['thread']})"))
    unread = launch_reads.substitute(copy.deepcopy(events), failed=bool(trace["failure"]))
    if unread is not None:  # a read a later launch's flag cannot hold: a check's, perhaps
        at = unread[0]
        index = next(i for i, e in enumerate(events) if e["kind"] == "read" and e["at"] == at)
        found += filter(None, [_replay(events, index)])
    seen = [(r["file"], r["function"], r["role"]) for r in known]
    fresh: list[Recorded] = []
    for entry in found:
        if (entry["file"], entry["function"], entry["role"]) not in seen:
            seen.append((entry["file"], entry["function"], entry["role"]))
            fresh.append(entry)
    return fresh


def _recorded(
    file: str, function: str, role: str, why: str, launched_by: list[str] | None = None
) -> Recorded:
    return {"file": file, "function": function, "role": role, "why": why, "launched_by": launched_by or []}


def _replay(events: list[dict[str, Any]], index: int) -> Recorded | None:
    """The function that launched and then read, at ``index``, what a launch of it wrote: the
    innermost function the read ran in that an earlier launch ran in too (the same call), when each
    of its launches went through a function of its own (``launched_by``: what does nothing when it
    is called again as a check); None otherwise."""
    read = events[index]
    launches = [e for e in events[:index] if e["kind"] == "train"]
    for function in read.get("within", []):
        inside = [e["within"] for e in launches if function in e["within"]]
        if not inside:
            continue
        children = [chain[chain.index(function) - 1] for chain in inside if chain.index(function) > 0]
        if len(children) < len(inside):
            return None  # it launched itself: called again, it would launch again
        launched_by = list(dict.fromkeys(child[1] for child in children))
        why = f"reads {read['path']}, which its launches wrote"
        return _recorded(*_function(function), "replay", why, launched_by)
    return None


def _function(found: Any) -> tuple[str, str]:
    """The file and function a [file, function] or [file, function, frame id] of the sandbox's trace
    names, to run the script with again; ValueError when it is none (capture.py refuses a trace the
    script has written into)."""
    shaped = isinstance(found, list) and len(found) in (2, 3)
    if not (shaped and isinstance(found[0], str) and isinstance(found[1], str)):
        raise ValueError(f"{found!r} names no function of a file")
    return found[0], found[1]


def _program(command: str) -> str:
    """The start of a command, for a note: its arguments may name this machine's paths."""
    words = command.split()
    return " ".join(words[:2]) + (" ..." if len(words) > 2 else "")


def attach(events: list[dict[str, Any]]) -> None:
    """Each beside hook into the ``before_submit`` of its launch, with its stop; each attribute read
    of it into the verify arguments it reached; what each prepare call returned into the flags it
    reached; refused where a spec cannot hold what the test did."""
    prepared_results.place(events)
    launches = [i for i, e in enumerate(events) if e["kind"] == "train"]
    for index, call in enumerate(events):
        if call["kind"] != "beside-call":
            continue
        hook = f"{call['function']}()"
        launch = next((i for i in launches if i > index), None)
        if launch is None:
            raise refused(location(call["at"]), f"calls {hook} after its last launch: no job to run beside")
        until = next((i for i in launches if i > launch), len(events))
        entry: dict[str, Any] = {"call": call["call"], **_arguments(call)}
        for i, event in enumerate(events[index + 1 :], start=index + 1):
            if event["kind"] == "beside-stop" and event["handle"] == call["handle"]:
                if i > until:
                    raise refused(
                        location(event["at"]), f"stops {hook} after a later launch: it runs beside one"
                    )
                entry["stop"] = {"call": event["method"], **_arguments(event)}
            elif event["kind"] == "beside-read" and event["handle"] == call["handle"]:
                _read(events, i, launch, until, f"${{hook:{call['function']}.{event['attribute']}}}")
        events[launch]["args"]["before_submit"].append(entry)


def _arguments(event: dict[str, Any]) -> dict[str, Any]:
    """A call's ``args`` entry: none when it takes none."""
    return {"args": event["args"]} if event["args"] else {}


def _read(events: list[dict[str, Any]], index: int, launch: int, until: int, reference: str) -> None:
    """The read at ``index`` replaced by ``reference`` in the verify arguments of the launch's checks
    it reached; refused when it reached anything else, or was read before the job ran."""
    read = events[index]
    what = f"{read['function']}().{read['attribute']}"
    if not launch < index < until:
        raise refused(
            location(read["at"]),
            f"reads {what} before its launch has ended: a hook's state is read once the job has ended, by a"
            " check (verify:)",
        )
    stand_in = read["stand_in"]
    reached = 0
    for event in events[index + 1 : until]:
        if event["kind"] == "verify":
            event["args"], count = _replaced(event["args"], stand_in, reference)
            reached += count
    rest = json.dumps([e for i, e in enumerate(events) if i != index], default=str)
    if str(stand_in) in rest or not reached:
        raise refused(
            location(read["at"]),
            f"reads {what} and uses it in code of its own: {ONLY_VERIFY}",
        )


def _replaced(value: Any, stand_in: int, reference: str) -> tuple[Any, int]:
    """``value`` with each whole occurrence of ``stand_in`` replaced, and how many there were."""
    if isinstance(value, int) and not isinstance(value, bool) and value == stand_in:
        return reference, 1
    if isinstance(value, list):
        pairs = [_replaced(item, stand_in, reference) for item in value]
        return [item for item, _ in pairs], sum(count for _, count in pairs)
    if isinstance(value, dict):
        found = {key: _replaced(item, stand_in, reference) for key, item in value.items()}
        return {key: item for key, (item, _) in found.items()}, sum(count for _, count in found.values())
    return value, 0
