"""prepared_results: what the prepare calls of a trace returned, in the spec (``recorded_calls.attach``
places them).

In the sandbox a function recorded as a prepare call returns a stand-in path
(``returned.PREPARED_STAND_IN``: ``/run-matrix-prepared-N-5089417263``, N the call's number). Its
text may reach only the flags of the launches after the call (train args, and the flag variables and
caller parameters that carried them: ``launch_reads.CARRIERS``), whole, where it becomes
``${prepared:FUNCTION}``; anything else is refused at the line of the event that holds it:

* a text that holds part of a stand-in but not all of it: its digits or its name changed by what the
  test did to the text (``.replace``, a slice, a regex) or written by the test itself. The spec could
  not give the node's result there, and the digits would reach the spec;
* a function called more than once whose result the test uses: ``${prepared:FUNCTION}`` names one;
* the stand-in anywhere else (a command, a check's argument, the job's env, a written file, a
  mapping's key), or in a launch before its call.

Each pass is one walk over the events, whatever the number of calls. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from runner.importer import groups, launch_reads
from runner.importer.events import location, refused
from runner.importer.returned import PREPARED_FORM, PREPARED_STAND_IN
from runner.spec.runtime import prepared

Calls = dict[str, tuple[int, dict[str, Any]]]  # stand-in -> (index, prepare-call event)
_DIGITS = PREPARED_STAND_IN.rsplit("-", 1)[1]  # a stand-in's parts that no other text holds
_PARTS = (_DIGITS, PREPARED_STAND_IN.split("-{}")[0].strip("/"))
_STAND_IN = re.compile(re.escape(PREPARED_STAND_IN).replace(r"\{\}", r"\d+"))
_NUMBER = re.compile(r"prepared-(\d+)-|(\d+)-" + _DIGITS)


def place(events: list[dict[str, Any]]) -> None:
    """What each prepare call returned as ``${prepared:FUNCTION}`` in the flags it reached, in place;
    refused where a spec cannot hold what the test did with it."""
    calls: Calls = {e["stand_in"]: (i, e) for i, e in enumerate(events) if e["kind"] == "prepare-call"}
    _whole(events, calls)
    _called_once(events, calls)
    _in_flags_only(events, calls)
    reference = {stand_in: prepared.reference(call["function"]) for stand_in, (_, call) in calls.items()}
    launch_reads.replace(events, _STAND_IN, lambda found: reference[found.group()])
    reached = _reached(events)
    for _, call in calls.values():
        call["flags"] = reached.get(call["function"], [])


def _texts(event: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], str, bool]]:
    """(key, text, whether the text is a mapping's key) of each leaf of an event and of its keys, but
    a prepare call's own stand-in."""
    for key, value in launch_reads.leaves(event):
        if event["kind"] != "prepare-call" or key != ("stand_in",):
            yield key, str(value), False
        yield from ((key, part, True) for part in key)


def _whole(events: list[dict[str, Any]], calls: Calls) -> None:
    """Each text of the events that holds part of a stand-in holds all of it, of a call there is."""
    for event in events:
        for key, text, _ in _texts(event):
            if not any(part in text.lower() for part in _PARTS):
                continue  # most texts: nothing of a stand-in
            for word in text.split():
                rest = _STAND_IN.sub(lambda found: "" if found.group() in calls else found.group(), word)
                if any(part in rest.lower() for part in _PARTS):
                    raise refused(location(event["at"]), _changed(event, key, word, calls))


def _changed(event: dict[str, Any], key: tuple[str, ...], word: str, calls: Calls) -> str:
    found = _NUMBER.search(word)  # the call's number, unless what the test did took it off: the first
    number = next(filter(None, found.groups())) if found else "1"
    call = calls.get(PREPARED_STAND_IN.format(number))
    held = f"{launch_reads.use(event)} {word!r} (its {'.'.join(key)})"
    if call is None:
        return (
            f"{held}, which holds run-matrix's stand-in for what a prepare step of kind call returns, though"
            " no prepare call returned it: a spec cannot hold it"
        )
    function = call[1]["function"]
    return (
        f"{held}, a text made of what {function}() returns and changed in code of its own, which import"
        f" cannot follow (a method, a slice, a part of the path): it did not run here, and {PREPARED_FORM},"
        f" whole or with more joined to it ($${{prepared:{function}}})"
    )


def _called_once(events: list[dict[str, Any]], calls: Calls) -> None:
    """A function whose result the test uses is called once: ``${prepared:FUNCTION}`` names one call
    of it (each call makes what it returns anew on the node: a fresh temporary folder)."""
    rest = json.dumps([e for e in events if e["kind"] != "prepare-call"], default=str)
    used = {calls[found][1]["function"] for found in _STAND_IN.findall(rest) if found in calls}
    first: dict[str, dict[str, Any]] = {}
    for _, call in sorted(calls.values(), key=lambda found: found[0]):
        before = first.setdefault(call["function"], call)
        if before is not call and call["function"] in used:
            function = call["function"]
            raise refused(
                location(call["at"]),
                f"calls {function}() again (line {before['at'][1]} called it) and uses what a call of it"
                f" returns: a spec's $${{prepared:{function}}} takes what one call of {function}() returns",
            )


def _in_flags_only(events: list[dict[str, Any]], calls: Calls) -> None:
    """Each stand-in reaches only the flags of launches after its call (train args, and the variables
    and arguments that carried them)."""
    for at, event in enumerate(events):
        for key, text, named in _texts(event):
            for stand_in in dict.fromkeys(_STAND_IN.findall(text)):
                index, call = calls[stand_in]  # _whole refused any other
                flags = event["kind"] == "train" and launch_reads.carrier(key) and not named
                if not flags or at < index:
                    function = call["function"]
                    inside = f" (its {'.'.join(key)})" if event["kind"] == "train" else ""
                    before = f" before calling it (line {call['at'][1]})" if at < index else ""
                    raise refused(
                        location(event["at"]),
                        f"{launch_reads.use(event)} what {function}() returns{inside}{before}:"
                        f" {PREPARED_FORM} ($${{prepared:{function}}})",
                    )


def _reached(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The flags each function's ``${prepared:FUNCTION}`` reached in the launches, for its note."""
    reached: dict[str, list[str]] = {}
    for event in (e for e in events if e["kind"] == "train"):
        for flag, values in _flags(event["args"]["train_args"]):
            for function in re.findall(r"\$\{prepared:(\w+)\}", " ".join(values)):
                reached.setdefault(function, [])
                if f"--{flag}" not in reached[function]:
                    reached[function].append(f"--{flag}")
    return reached


def _flags(train_args: Any) -> list[tuple[str, tuple[str, ...]]]:
    """The flags of a launch's train args as the script gave them (none when they do not parse)."""
    try:
        return groups.flags(str(train_args).split())
    except ValueError:
        return []
