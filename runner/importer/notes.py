"""notes: what a script did that a spec does not hold, each said where the script did it.

A note is no refusal: the import goes on, and the spec's header keeps every note (a file the test
wrote that no step can hold, a run named by the clock, a variable it set in its own environment,
miles' clean-up around launches, a check that reads Ray's default session).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.errors import Location
from runner.importer.events import location
from schemas import calls


@dataclass(frozen=True)
class Note:
    """Something the script did that a spec does not hold (a file it wrote, code the recorder cannot see)."""

    message: str
    at: Location


@dataclass(frozen=True)
class SystemStep(Note):
    """A prepare step that touches the system (``runner.launch.system_steps``): refused unless allowed."""

    removed: str = ""  # a removal's path, which a launch's output folder (--save) may still hold


# the kinds of event that are notes
NOTED = ("effect", "silent", "clock", "setenv", "prepare-call", "beside-call", "replay")


def interpreter_note(call: dict[str, Any], version: str) -> Note | None:
    """A launch whose flags or env name the interpreter's version (``python3.11``, miles' verifiers
    test builds a venv's site-packages path from ``sys.version_info``): the version import ran the
    script with, which is not the node's Python when that differs."""
    given = call["args"]
    carriers = {"train_args": given.get("train_args") or "", **(given.get("extra_env_vars") or {})}
    named = re.compile(rf"\bpython{re.escape(version)}\b")
    found = [name for name, value in carriers.items() if named.search(str(value))]
    if not found:
        return None
    return Note(
        f"{', '.join(found)} name{'s' if len(found) == 1 else ''} python{version}, the version of the"
        " interpreter import ran the script with (sys.version_info): the spec holds it as written, and on"
        " a node whose Python is another version the path it is part of is another",
        location(call["at"]),
    )


# miles' clean-up around launches: ``ray stop --force || true; pkill -9 sglang || true; sleep 10``
NODE_RESET = {"ray stop", "ray stop --force", "pkill -9 sglang", "pkill sglang"}


def resets_node(command: str) -> bool:
    """miles' clean-up and its parts (``pkill -9 sglang; true``), nothing else."""
    parts = [part.strip().removesuffix("|| true").strip() for part in command.split(";")]
    parts = [part for part in parts if part and part != "true"]
    resets = [part for part in parts if part in NODE_RESET]
    waits = [part for part in parts if re.fullmatch(r"sleep \d+", part)]
    return bool(resets) and len(resets) + len(waits) == len(parts)


def reset_note(command: str, at: Location) -> Note:
    return Note(
        f"`{command}` clears the node around launches: not a step, since `run` gives each cell a Ray head"
        " of its own and stops it with what its hooks started (and never kills by name)",
        at,
    )


def session_note(call: str, paths: Sequence[str]) -> str:
    return (
        f"{calls.function_of(call)}() reads {', '.join(paths)}, Ray's default session: the cell's own only"
        " on a cluster started with Ray's default temp dir, while run starts a cell's Ray head with a private"
        " one (run-matrix-ray-*): run this cell on such a cluster, with --ray-address"
    )


def of_write(event: dict[str, Any], late: bool, root: str) -> Note:
    """A file the test writes that no prepare step holds."""
    if event["text"] is None:
        why = "is not text of at most 64 KiB"
    elif late:
        why = "is written after the last launch"
    else:
        why = "is in the miles checkout, whose path a spec never names"
    return Note(f"writes {event['path']}, which {why}: recorded, not done", location(event["at"]))


def _handed(event: dict[str, Any]) -> str:
    """Where what a prepare call returns goes, when a launch's flags hold it (recorded_calls.py)."""
    flags = event.get("flags")
    if not flags:
        return ""
    return (
        f", and what it returns goes into {', '.join(flags)} as $${{prepared:{event['function']}}}, filled"
        " with what the call returned when the cell runs"
    )


def of_event(event: dict[str, Any]) -> Note:
    """The note of an event of the trace that a spec does not hold (``NOTED``)."""
    return Note(_event_message(event), location(event["at"]))


def _event_message(event: dict[str, Any]) -> str:
    if event["kind"] == "clock":
        flags = ", ".join(event.get("flags") or [])
        if not flags:
            return f"{event['function']}() names each run by the clock; no flag of the launch takes it"
        return (
            f"{event['function']}() names each run by the clock; {flags} name it $${{run-id}}, made anew for"
            " each attempt in the same form (each run has folders of its own, as the test's runs do)"
        )
    if event["kind"] == "effect":
        return f"{event['what']}: recorded, not done; a spec does not hold it"
    if event["kind"] == "prepare-call":
        return (
            f"{event['function']}() {event['reason']}: the spec calls {event['function']}() itself, as a"
            " prepare step of kind call (every time the cell runs, from the checkout's root); what it does"
            f" there is the test's own, not the spec's{_handed(event)}"
        )
    if event["kind"] == "replay":
        left_out = ", ".join(f"{name}()" for name in event["launched_by"])
        return (
            f"{event['function']}() {event['reason']} in code of its own after them: the spec checks the run"
            f" by calling {event['function']}() again once the cell's job has ended, with {left_out} doing"
            " nothing there (verify: ... launched_by), as the cells before ran those launches"
        )
    if event["kind"] == "beside-call":
        return (
            f"{event['function']}() {event['reason']} that runs beside the launch: the spec calls it as a"
            " launch.before_submit hook, after `ray start` rather than before it, and keeps it up until the"
            " job has ended"
        )
    if event["kind"] == "setenv":
        return (
            f"sets {event['name']}={event['value']!r} in its own environment, which what it starts inherits"
            " (miles' `ray start`): a spec holds the job's env (env:), not the test process's; run starts"
            " each cell's Ray head with the GPUs the cell asks for (cluster.gpus_per_node)"
        )
    return (
        f"prepare() calls {event['function']}(), code of the script's own that uses no miles helper and"
        " touched no file here: what it does on a real node is not in the spec"
    )
