"""launch_reads: a file one launch writes, read by the script for a later launch's flags.

miles' checkpoint tests read ``latest_checkpointed_iteration.txt`` of the first launch's ``--save``
folder and pass it as ``--ckpt-step`` of the next. In the sandbox that read gets a stand-in
(``trace.READ_STAND_IN``: digits, so the test's own ``isdigit()`` check passes); here each
stand-in must occur only where the value went — as a whole word of a later launch's train args (its
command lines, the script's flag variables and the calling function's arguments with it) — and it
becomes the spec's run-time reference ``${read-integer:PATH}``. A stand-in anywhere else (an env
var, a check's argument, a prepare command, part of a longer word, nowhere at all) is a value a
spec cannot read at launch: the import is refused, with the reason a read of a launch's output
always had. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from runner import reads
from runner.importer.trace import written_by

Refusal = tuple[list[Any], str]  # the read's [file, line], why
# where a later launch's event may hold the value: (key, ...) prefixes of the train event
CARRIERS = (("args", "train_args"), ("commands",), ("variables",), ("caller", "parameters"))


def substitute(events: list[dict[str, Any]], failed: bool) -> Refusal | None:
    """Each read stand-in in ``events`` turned into its reference, in place; why not, when one
    reaches anything but a later launch's train args (or the script failed after reading one)."""
    done: set[str] = set()  # a file read twice has one stand-in: each later launch reads it anew
    for index, read in enumerate(events):
        if read["kind"] != "read" or read["stand_in"] in done:
            continue
        if (
            failed
            or reads.path_problem(read["path"])
            or not _reaches_only_flags(events, index, read["stand_in"])
        ):
            return read["at"], _reason(read["path"], events)
        _replace(events[index + 1 :], read["stand_in"], reads.reference("integer", read["path"]))
        done.add(read["stand_in"])
    return None


def _reason(path: str, events: list[dict[str, Any]]) -> str:
    given, line = written_by(path, events) or ("", None)
    return (
        f"reads {path}, which its launch at line {line} would write ({given}):"
        " a cell does not read what another cell's run wrote, so this test is not one spec"
    )


def _reaches_only_flags(events: list[dict[str, Any]], index: int, stand_in: str) -> bool:
    """The stand-in occurs, as whole words, in a later launch's train args, and nowhere else."""
    in_flags = False
    for at, event in enumerate(events):
        if event["kind"] == "read":
            continue
        for key, value in _leaves(event, ()):
            if stand_in not in str(value):
                continue
            carried = event["kind"] == "train" and at > index and _carrier(key)
            if not carried or not _whole_words(str(value), stand_in):
                return False
            in_flags = in_flags or key == ("args", "train_args")
    return in_flags


def _carrier(key: tuple[str, ...]) -> bool:
    return any(key[: len(prefix)] == prefix for prefix in CARRIERS)


def _whole_words(text: str, stand_in: str) -> bool:
    return text.count(stand_in) == len(_word(stand_in).findall(text))


def _word(stand_in: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![^\s'\"]){re.escape(stand_in)}(?![^\s'\"])")


def _leaves(value: Any, key: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for name, child in value.items():
            yield from _leaves(child, (*key, str(name)))
    elif isinstance(value, list):
        for number, child in enumerate(value):
            yield from _leaves(child, (*key, str(number)))
    elif not isinstance(value, bool):
        yield key, value


def _replace(events: list[dict[str, Any]], stand_in: str, reference: str) -> None:
    word = _word(stand_in)
    for event in (e for e in events if e["kind"] == "train"):
        for prefix in CARRIERS:
            parent = event
            for name in prefix[:-1]:
                parent = parent[name]
            parent[prefix[-1]] = _replaced(parent[prefix[-1]], word, reference)


def _replaced(value: Any, word: re.Pattern[str], reference: str) -> Any:
    if isinstance(value, dict):
        return {name: _replaced(child, word, reference) for name, child in value.items()}
    if isinstance(value, list):
        return [_replaced(child, word, reference) for child in value]
    if isinstance(value, str):
        return word.sub(lambda _: reference, value)
    if isinstance(value, int) and not isinstance(value, bool) and word.fullmatch(str(value)):
        return reference
    return value


def kept_steps(steps: dict[str, dict[str, Any]], words: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """A reading cell's prepare without the removal of what it reads: the script removes the folder
    once, before the launch that writes it (rule G9 refuses a cell that removes what it reads)."""
    read = [found.path for word in words if (found := reads.parse(word)) is not None]
    kept: dict[str, Any] = {}
    said: list[str] = []
    for name, step in steps.items():
        paths = step.get("paths") if step.get("kind") == "remove" else None
        if not paths or not read:
            kept[name] = step
            continue
        left = [p for p in paths if not any(reads.under(r, p) for r in read)]
        said += [
            f"prepare.{name} removes {p}, which this launch reads at launch ({r}): left out of its cell,"
            " as the script removes it once, before the launch that writes it"
            for p in paths
            if p not in left
            for r in read
            if reads.under(r, p)
        ]
        if left:
            kept[name] = {**step, "paths": left}
    return kept, said
