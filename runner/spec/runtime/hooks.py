"""hooks: a ``verify:`` argument that reads the state a ``launch.before_submit`` hook kept.

``num_successful_injections: $${hook:spawn_fault_injector.num_successful_injections}``: a
run-time reference, like ``$${read-integer:PATH}`` (written with ``$$`` so the resolver leaves it
alone), whose value is an attribute of what the hook returned, as JSON, read once the job has ended
(after the hook's ``stop:`` ran). FUNCTION is the hook's function name, ATTRIBUTE a public name of
what it returned (miles' soak test reads ``injector.num_successful_injections``). Only a whole
string of a verify entry's ``args`` is one; nothing is evaluated. Pure; ``run/services.py`` asks the
hook for its report, ``render`` writes the same as shell.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from schemas import calls
from schemas.calls import PUBLIC_NAME, Hook
from schemas.spec import Spec

REFERENCE = re.compile(r"\$\{hook:([^}]*)\}")  # any reference, to say what is wrong with it
WHOLE = re.compile(rf"\$\{{hook:([A-Za-z_][A-Za-z0-9_]*)\.({PUBLIC_NAME})\}}")  # a well-formed one
FORM = "write the whole value as $${hook:FUNCTION.ATTRIBUTE} (FUNCTION a launch.before_submit hook's)"
Reported = Mapping[str, Mapping[str, Any]]  # a hook's function name -> its attributes' JSON values


@dataclass(frozen=True)
class Read:
    """One attribute of what a hook returned, as a verify argument reads it."""

    function: str
    attribute: str

    @property
    def reference(self) -> str:
        return f"${{hook:{self.function}.{self.attribute}}}"

    def __str__(self) -> str:
        return f"{self.function}.{self.attribute}"


def parse(text: str) -> Read | None:
    """The read ``text`` is, when its whole text is one well-formed hook reference."""
    found = WHOLE.fullmatch(text)
    return Read(found.group(1), found.group(2)) if found else None


PROSE = frozenset({"description", "why_not", "todo", "vars"})  # text, or values only their users use


def mentions(text: str) -> bool:
    """Whether ``text`` holds a hook reference anywhere, well-formed or not."""
    return "${hook:" in text


def strings(value: Any, place: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str, bool]]:
    """(place, text, whether it is a mapping's key) of every string in a JSON value, in the order
    written; a key's place is its own."""
    stack: list[tuple[tuple[str, ...], Any, bool]] = [(place, value, False)]
    while stack:
        where, item, key = stack.pop()
        if isinstance(item, str):
            yield where, item, key
        elif isinstance(item, list):
            stack += reversed([((*where, str(i)), x, False) for i, x in enumerate(item)])
        elif isinstance(item, dict):
            for name, x in reversed(item.items()):
                stack += [((*where, str(name)), x, False), ((*where, str(name)), str(name), True)]


def references(spec: Spec) -> tuple[tuple[tuple[str, ...], str, bool], ...]:
    """(place, text, whether a key) of every string of ``spec`` holding ``${``, in the order written,
    its prose left out: all that the rules on references (hook, prepared, run-id) read. A text that
    holds no ``${`` is no reference of any kind, well-formed or not, and is passed over unplaced."""
    found: list[tuple[tuple[str, ...], str, bool]] = []
    data = spec.model_dump(mode="json", exclude=set(PROSE))
    stack: list[tuple[tuple[str, ...], Iterator[tuple[Any, Any]], bool]] = [((), iter(data.items()), True)]
    while stack:  # depth first, a key before its value: as written
        where, items, keyed = stack[-1]
        for name, value in items:
            text = str(name)
            if keyed and "${" in text:
                found.append(((*where, text), text, True))
            if isinstance(value, str):
                if "${" in value:
                    found.append(((*where, text), value, False))
            elif isinstance(value, dict):
                stack.append(((*where, text), iter(value.items()), True))
                break
            elif isinstance(value, list):
                stack.append(((*where, text), enumerate(value), False))
                break
        else:
            stack.pop()
    return tuple(found)


def verify_reads(spec: Spec) -> Iterator[tuple[tuple[str, ...], Read]]:
    """(place, read) of every well-formed whole hook reference of the verify entries' arguments,
    in the order written (``("verify", NAME, "args", ...)``)."""
    for name, check in spec.verify.items():
        for place, text, key in strings(check.args, ("verify", name, "args")):
            read = None if key else parse(text)
            if read is not None:
                yield place, read


def hook_functions(spec: Spec) -> list[str]:
    """The function name of each hook of ``launch.before_submit``, in order (a name may repeat)."""
    return [calls.function_of(entry.call) for _, entry in spec.launch.started() if isinstance(entry, Hook)]


def state_read(spec: Spec, function: str) -> tuple[str, ...]:
    """The attributes of ``function``'s hook that verify arguments read, each once, sorted."""
    return tuple(sorted({read.attribute for _, read in verify_reads(spec) if read.function == function}))


def filled(value: Any, reported: Reported) -> Any:
    """``value`` with each whole hook reference replaced by the reported JSON value."""
    if isinstance(value, list):
        return [filled(item, reported) for item in value]
    if isinstance(value, dict):
        return {key: filled(item, reported) for key, item in value.items()}
    read = parse(value) if isinstance(value, str) else None
    return value if read is None else reported[read.function][read.attribute]
