"""launch: what one ``execute_train`` call launches, read from the commands it would run.

This is the script's side of the round trip: the train script and the GPUs of ``ray start``,
and the runtime env, MODEL_ARGS and flags of ``ray job submit``, parsed as the shell would
split them. It is read independently of the spec the import writes, so comparing the two
checks the import.
"""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from runner.errors import Location
from runner.importer import shell
from runner.importer.events import refused
from runner.spec.runtime import prepared, reads, run_id

MODEL_ARGS = "${MODEL_ARGS[@]}"


@dataclass(frozen=True)
class Launched:
    train_script: str  # relative to the miles checkout, as a spec names it
    num_gpus_per_node: int
    model_type: str | None  # the scripts/models/<type>.sh the submission sources
    model_args: tuple[str, ...] | None  # MODEL_ARGS written out; None: ${MODEL_ARGS[@]} of model_type
    train_args: tuple[str, ...]
    env: dict[str, str]


def launched(
    commands: Sequence[str], train_args: str, root: str, secrets: Sequence[str], at: Location
) -> Launched:
    """Parse the ``ray start`` and ``ray job submit`` commands of one execute_train call."""
    start = _tokens(_one(commands, "ray start", at), secrets, at, root)
    submit = _tokens(_one(commands, "ray job submit", at), secrets, at, root)
    argv = submit[submit.index("--") + 1 :]
    script = argv[1]
    if not script.startswith(f"{root}/"):
        raise refused(at, f"launches {script}, which is not in the miles checkout")
    rest = argv[2:]
    tail = tuple(shell.split(train_args))
    if rest[:1] == [MODEL_ARGS]:
        model_args = None
        flags = tuple(rest[1:])
    elif tuple(rest[len(rest) - len(tail) :]) == tail:
        model_args, flags = tuple(rest[: len(rest) - len(tail)]), tail
    else:
        raise refused(at, "launches flags other than the train_args it was given")
    env_json = next(t for t in submit if t.startswith("--runtime-env-json=")).split("=", 1)[1]
    return Launched(
        script.removeprefix(f"{root}/"),
        int(start[start.index("--num-gpus") + 1]),
        _sourced_model(submit, root),
        model_args,
        flags,
        {name: str(value) for name, value in json.loads(env_json)["env_vars"].items()},
    )


def _one(commands: Sequence[str], what: str, at: Location) -> str:
    found = [c for c in commands if what in c]
    if len(found) != 1:
        raise refused(at, f"runs {len(found)} `{what}` commands in one execute_train call; expected one")
    return found[0]


_ROOT = "\0miles-root\0"  # no command holds a NUL: the checkout's path while the words are split


def _tokens(command: str, secrets: Sequence[str], at: Location, root: str = "") -> list[str]:
    """The command's words as the shell splits them; words the shell would expand are refused. The
    checkout's path is one word however it is spelt (miles writes ``python3 {train_script}``
    unquoted: a checkout in ``/home/me/my miles`` is still a checkout)."""
    try:
        spaced = bool(root) and root != shlex.quote(root)
        words = shell.split(command.replace(root, _ROOT) if spaced else command)
        words = [word.replace(_ROOT, root) for word in words] if spaced else words
    except ValueError as exc:
        raise refused(at, f"runs a command the shell cannot split ({exc}): {command[:200]}") from None
    # ${HOME}: capture.py writes the sandbox's HOME back so (the home of whoever runs the spec)
    allowed = [MODEL_ARGS, "${HOME}", *(f"${{{name}}}" for name in secrets)]
    for word in (w for w in words if reads.parse(w) is None):  # a read at launch: launch_reads.py
        rest = word
        for reference in allowed:
            rest = rest.replace(reference, "")
        rest = prepared.REFERENCE.sub("", rest)  # what a prepare call returned: recorded_calls.py
        rest = rest.replace(run_id.REFERENCE, "")  # the run's name, made per attempt: run_ids.py
        if "$" in rest or "`" in rest:
            raise refused(at, f"launches {word!r}, which the shell would expand: its value is not known here")
    return words


def _sourced_model(words: Sequence[str], root: str) -> str | None:
    prefix, suffix = f"{root}/scripts/models/", ".sh"
    for before, word in itertools.pairwise(words):
        if before == "source" and word.startswith(prefix) and word.endswith(suffix):
            return word[len(prefix) : -len(suffix)]
    return None
