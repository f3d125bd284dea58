"""prepared: a launch flag that takes what a prepare step of kind ``call`` returned.

``load-debug-rollout-data: "$${prepared:materialize_cyclic_debug_rollout_data}/{rollout_id}.pt"``: a
run-time reference, like ``$${read-integer:PATH}`` (written with ``$$`` so the resolver leaves it
alone), replaced, when the job is submitted, by the text the function of this cell's prepare call of
that name returned (miles' FT soak test makes a folder of debug rollout data and launches with its
path). Unlike a read, it may stand anywhere inside a flag's text (``{rollout_id}`` is miles' own
template, passed on as it is), and nowhere else. What the function returns must be a ``str`` or an
``os.PathLike``: one line of text, which ``programs.PREPARED_PROGRAM`` checks where it runs. Nothing
is evaluated. Pure; ``run/prepare.py`` runs the call, ``run/cell_run.py`` fills the flags, ``render``
and ``script`` write the same as shell.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from schemas import calls
from schemas.prepare import Call
from schemas.spec import Spec

MARK = "${prepared:"
REFERENCE = re.compile(r"\$\{prepared:([^}]*)\}")  # any reference, to say what is wrong with it
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # FUNCTION: a plain Python name, as after the : of a call
FORM = "write $${prepared:FUNCTION} in a flag's value (FUNCTION: the function of a prepare step of kind call)"
VARIABLE_PREFIX = "RUN_MATRIX_PREPARED_"  # the shell variable a rendered script reads the result into
FILE_PREFIX = "RUN_MATRIX_RESULT_FILE_"  # the shell variable naming the file the call writes it to


def reference(function: str) -> str:
    """The text a flag holds where the result goes: ``${prepared:FUNCTION}``."""
    return f"{MARK}{function}}}"


def mentions(text: str) -> bool:
    """Whether ``text`` holds a prepared reference anywhere, well-formed or not."""
    return MARK in text


def functions(text: str) -> list[str]:
    """The FUNCTION of each well-formed reference of ``text``, each once, in the order written."""
    found = (match.group(1) for match in REFERENCE.finditer(text))
    return list(dict.fromkeys(name for name in found if NAME.fullmatch(name)))


def problem(text: str) -> str | None:
    """What is wrong with the references ``text`` holds; None when each is well-formed."""
    matches = list(REFERENCE.finditer(text))
    if text.count(MARK) != len(matches):
        return f"{text!r} holds {MARK} without the }} that closes it"
    for match in matches:
        if not NAME.fullmatch(match.group(1)):
            said = repr(text) if match.group() == text else f"{text!r} holds {match.group()!r}, which"
            return (
                f"{said} names no FUNCTION (a plain Python name: letters, digits and _, not starting with"
                " a digit, no dots)"
            )
    return None


def in_flag(place: Sequence[str]) -> bool:
    """Whether ``place`` (a key of the spec's JSON) is a flag's value of ``args`` or an item of it."""
    return place[:1] == ("args",) and len(place) in (3, 4)


def flag_references(spec: Spec) -> Iterator[tuple[tuple[str, ...], str]]:
    """(place, FUNCTION) of each well-formed reference among the flags of ``args``, in launch order
    (``("args", GROUP, FLAG)``, with the item's index for a list)."""
    for group, flags in spec.args.groups():
        for name, value in flags.items():
            items = enumerate(value) if isinstance(value, list) else [(None, value)]
            for index, item in items:
                place = ("args", group, name) + (() if index is None else (str(index),))
                for function in functions(item) if isinstance(item, str) else []:
                    yield place, function


def call_steps(spec: Spec) -> list[tuple[str, str]]:
    """(step name, function name) of each prepare step of kind call, in order (a function may repeat)."""
    return [
        (name, calls.function_of(step.call)) for name, step in spec.prepare.items() if isinstance(step, Call)
    ]


def taken(spec: Spec) -> dict[str, list[str]]:
    """The prepare calls whose result flags take, in the order they run: step name -> the flags
    (``--NAME``, each once), for a function that exactly one call step has (G13 refuses the others)."""
    steps = call_steps(spec)
    references = list(flag_references(spec))
    found: dict[str, list[str]] = {}
    for name, function in steps:
        flags = [f"--{place[2]}" for place, used in references if used == function]
        if flags and [f for _, f in steps].count(function) == 1:
            found[name] = list(dict.fromkeys(flags))
    return found


def variable(function: str) -> str:
    """The shell variable a rendered script reads ``function``'s result into (a plain name already)."""
    return VARIABLE_PREFIX + function


def file_variable(function: str) -> str:
    """The shell variable naming the fresh file ``function``'s result is written to."""
    return FILE_PREFIX + function


def filled(argv: Sequence[str], results: Mapping[str, str]) -> tuple[str, ...]:
    """``argv`` with each reference replaced by what its function returned (``results``: by function)."""
    return tuple(REFERENCE.sub(lambda m: results.get(m.group(1), m.group()), token) for token in argv)


def for_shell(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` with each reference as the ``${VARIABLE}`` a rendered script read the result into."""
    return tuple(REFERENCE.sub(lambda m: f"${{{variable(m.group(1))}}}", token) for token in argv)
