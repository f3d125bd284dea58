"""run_ids: where the test named its run by the clock (miles' ``create_run_id()``), ``${run-id}``.

In the sandbox ``create_run_id()`` returns a stand-in (``STAND_IN``, which no other text holds). In
the flags of the launches (their train args and what carried them there: ``launch_reads.CARRIERS``)
it becomes the spec's run-time reference ``${run-id}``, which ``run`` names anew in each attempt, as
the test names each of its runs. Anywhere else (a command a prepare step runs, the job's env, a
check's argument, a file the test writes) a spec cannot give that name: the import is refused at the
line of the event that holds it. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from runner.importer import launch_reads
from runner.importer.events import location, refused
from runner.importer.returned import RUN_ID_STAND_IN as STAND_IN
from runner.spec.runtime import run_id

_STAND_IN = re.compile(re.escape(STAND_IN))
_PART = STAND_IN.rsplit("-", 1)[1]  # its digits: a text that holds them holds part of the stand-in
# execute_train's config (the script's own dataclass, run_id a field of it): what the launch took of it
# is in the launch's commands, which are checked
_CONFIG = ("args", "config")
# the W&B flags' group names the run by the clock upstream; run-matrix names it by the cell (target.py)
_WANDB_GROUP = re.compile(r"--wandb-group[= ]+\S+")


def place(events: list[dict[str, Any]]) -> None:
    """Each stand-in in the launches' flags as ``${run-id}``, in place; refused where a spec cannot
    hold what the test did with the run's name."""
    for event in events:
        for key, value in launch_reads.leaves(event):
            text = _WANDB_GROUP.sub("", str(value)) if event["kind"] == "wandb" else str(value)
            if _PART not in text:
                continue
            carried = event["kind"] == "train" and (launch_reads.carrier(key) or key[:2] == _CONFIG)
            if not carried or text.count(_PART) != text.count(STAND_IN):
                raise refused(location(event["at"]), _why(event, key, text))
    launch_reads.replace(events, _STAND_IN, run_id.REFERENCE)
    for event in (e for e in events if e["kind"] == "wandb"):  # as the flags it is found among hold it
        event["text"] = str(event["text"]).replace(STAND_IN, run_id.REFERENCE)
    for clock in (e for e in events if e["kind"] == "clock"):
        clock["flags"] = _flags(events)  # for its note


def _flags(events: list[dict[str, Any]]) -> list[str]:
    """The flags of the launches that name the run (``--save``, ...), each once, but the W&B group."""
    found: list[str] = []
    for event in (e for e in events if e["kind"] == "train"):
        flag = ""
        for word in str(event["args"].get("train_args", "")).split():
            flag = word if word.startswith("--") else flag
            if run_id.REFERENCE in word and flag not in (*found, "--wandb-group"):
                found.append(flag)
    return found


def _why(event: dict[str, Any], key: tuple[str, ...], text: str) -> str:
    word = next((w for w in text.split() if _PART in w), text)  # a launch's flags: the one that holds it
    shown = text if len(text) <= 200 and event["kind"] != "train" else word[:200]
    return (
        f"{launch_reads.use(event)} {shown!r} (its {'.'.join(key)}), which holds the run's name"
        " create_run_id() made, or part of it: a spec names a run only in a launch's flags ($${run-id},"
        " made anew for each attempt when the job is submitted); nothing else of the spec can take it"
    )
