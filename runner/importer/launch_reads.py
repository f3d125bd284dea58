"""launch_reads: a file one launch writes, read by the script for a later launch's flags.

miles' checkpoint tests read ``latest_checkpointed_iteration.txt`` of the first launch's ``--save``
folder and pass it as ``--ckpt-step`` of the next. In the sandbox that read gets a stand-in
(``trace.READ_STAND_IN``: digits, so the test's own ``isdigit()`` check passes); here each
stand-in must occur only where the value went — as a whole word of a later launch's train args (its
command lines, the script's flag variables and the calling function's arguments with it) — and it
becomes the spec's run-time reference ``${read-integer:PATH}``. A stand-in anywhere else (an env
var, a check's argument, a prepare command, part of a longer word, nowhere at all) is a value a
spec cannot read at launch: the import is refused, with the reason a read of a launch's output
always had.

What a launch writes is also kept from the later cells' prepare: each cell gets the prepare of
everything the script ran before its launch, but a ``remove`` the script ran once, before an earlier
launch wrote the folder (``rm -rf DIR`` before ``--save DIR``), would delete that launch's output
between the cells (the async-save cell after save and load). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from runner.importer import groups
from runner.importer.trace import written_by
from runner.spec.runtime import reads

Refusal = tuple[list[Any], str]  # the read's [file, line], why
# where a later launch's event may hold the value: (key, ...) prefixes of the train event
CARRIERS = (("args", "train_args"), ("commands",), ("variables",), ("caller", "parameters"))
# what the test did with a stand-in, by the kind of event it reached
USES = {"command": "runs a command with", "verify": "checks with", "write": "writes a file with"}


def substitute(events: list[dict[str, Any]], failed: bool) -> Refusal | None:
    """Each read stand-in in ``events`` turned into its reference, in place; why not, when one
    reaches anything but a later launch's train args (or the script failed after reading one)."""
    done: set[str] = set()  # a file read twice between two launches has one stand-in
    for index, read in enumerate(events):
        if read["kind"] != "read" or read["stand_in"] in done:
            continue
        if (
            failed
            or reads.path_problem(read["path"])
            or not _reaches_only_flags(events, index, read["stand_in"])
        ):
            return read["at"], refusal(read["path"], events) or f"reads {read['path']}"
        replace(events[index + 1 :], _word(read["stand_in"]), reads.reference("integer", read["path"]))
        done.add(read["stand_in"])
    return None


def refusal(path: str, events: list[dict[str, Any]]) -> str | None:
    """Why the script's own reading of ``path`` cannot be imported, when a launch of it writes there."""
    found = written_by(path, events)
    if found is None:
        return None
    given, line = found
    return (
        f"reads {path}, which its launch at line {line} would write ({given}), in code of its own: a"
        " spec reads a launch's output only as a check's argument (verify:, a function of miles' or of the"
        " test's, called after its launch), as a later launch's flag ($${read-integer:PATH}), or in the lines"
        " after the launches of a function that launched through functions of its own (verify: launched_by)"
    )


def _reaches_only_flags(events: list[dict[str, Any]], index: int, stand_in: str) -> bool:
    """The stand-in occurs, as whole words, in a later launch's train args, and nowhere else."""
    in_flags = False
    for at, event in enumerate(events):
        if event["kind"] == "read":
            continue
        for key, value in leaves(event, ()):
            if stand_in not in str(value):
                continue
            carried = event["kind"] == "train" and at > index and carrier(key)
            if not carried or not _whole_words(str(value), stand_in):
                return False
            in_flags = in_flags or key == ("args", "train_args")
    return in_flags


def carrier(key: tuple[str, ...]) -> bool:
    """Whether ``key`` of a train event is where a later launch holds a value (``CARRIERS``)."""
    return any(key[: len(prefix)] == prefix for prefix in CARRIERS)


def use(event: dict[str, Any]) -> str:
    """What the test did with a stand-in that reached ``event`` (``USES``): ``launches with``, ..."""
    return USES.get(event["kind"], "launches with" if event["kind"] == "train" else "uses")


def _whole_words(text: str, stand_in: str) -> bool:
    return text.count(stand_in) == len(_word(stand_in).findall(text))


def _word(stand_in: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![^\s'\"]){re.escape(stand_in)}(?![^\s'\"])")


def leaves(value: Any, key: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(key, value) of each leaf of an event: a string, a number, None (a bool is none)."""
    if isinstance(value, dict):
        for name, child in value.items():
            yield from leaves(child, (*key, str(name)))
    elif isinstance(value, list):
        for number, child in enumerate(value):
            yield from leaves(child, (*key, str(number)))
    elif not isinstance(value, bool):
        yield key, value


Reference = str | Callable[[re.Match[str]], str]  # the text, or what makes it of the match


def replace(events: list[dict[str, Any]], word: re.Pattern[str], reference: Reference) -> None:
    """Each match of ``word`` in the train events' carriers replaced by ``reference``, in place."""
    for event in (e for e in events if e["kind"] == "train"):
        for prefix in CARRIERS:
            parent = event
            for name in prefix[:-1]:
                parent = parent[name]
            parent[prefix[-1]] = _replaced(parent[prefix[-1]], word, reference)


def _replaced(value: Any, word: re.Pattern[str], reference: Reference) -> Any:
    if isinstance(value, dict):
        return {name: _replaced(child, word, reference) for name, child in value.items()}
    if isinstance(value, list):
        return [_replaced(child, word, reference) for child in value]
    fill = reference if callable(reference) else lambda _: reference
    if isinstance(value, str):
        return word.sub(fill, value)
    found = word.fullmatch(str(value)) if isinstance(value, int) and not isinstance(value, bool) else None
    return value if found is None else fill(found)


@dataclass(frozen=True)
class Written:
    """A folder an earlier launch of the script writes (an output flag's value: ``--save DIR``), and
    the prepare steps the script runs after that launch, before the one at hand."""

    flag: str
    folder: str
    then: tuple[dict[str, Any], ...]


def outputs(words: Sequence[str], output_flags: Sequence[str]) -> list[tuple[str, str]]:
    """(``--flag``, folder) of each output flag a launch's train args give an absolute folder."""
    return [
        (f"--{name}", given[0])
        for name, given in groups.flags(words)
        if name in output_flags and len(given) == 1 and given[0].startswith("/")
    ]


def kept_steps(
    steps: dict[str, dict[str, Any]], written: Sequence[Written]
) -> tuple[dict[str, Any], list[str]]:
    """A later cell's prepare without the removal of what an earlier launch writes: the script removes
    it once, before that launch, and the cells of a spec run in order (rule G9 refuses a cell that
    removes what it reads). A removal the script runs again after that launch stays."""
    kept: dict[str, Any] = {}
    said: list[str] = []
    for name, step in steps.items():
        paths = step.get("paths") if step.get("kind") == "remove" else None
        if not paths:
            kept[name] = step
            continue
        gone = {p: w for p in paths for w in written if step not in w.then and _overlap(p, w.folder)}
        said += [
            f"prepare.{name} removes {p}, which an earlier launch writes ({w.flag} {w.folder}): the script"
            " removes it once, before that launch, so the cells after it leave it out (a cell selected alone"
            " with -k keeps what an earlier run left there)"
            for p, w in gone.items()
        ]
        left = [p for p in paths if p not in gone]
        if left:
            kept[name] = {**step, "paths": left}
    return kept, said


def _overlap(removed: str, folder: str) -> bool:
    return reads.under(folder, removed) or reads.under(removed, folder)
