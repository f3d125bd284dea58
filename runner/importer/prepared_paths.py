"""The import sandbox's guard of what ``os.path`` and ``pathlib`` make of what a prepare call returns
(``returned.Prepared``: a stand-in path, ``/run-matrix-prepared-1-5089417263``), installed by
``harness.py``.

A spec hands that result to a launch's flags as ``$${prepared:FUNCTION}``, in place of the stand-in:
so a path function of it gives what the spec can hold only when, given another path in the
stand-in's place, it gives the same text with that path in it. ``os.path.join(x, "a")``,
``Path(x) / "a"`` and ``os.path.dirname(f"{x}/a")`` do; ``os.path.dirname(x)``, ``Path(x).parent``,
``Path(x).name`` and ``os.path.normpath(f"{x}/..")`` do not (the stand-in's parent is ``/``, which
the spec would launch with, where the node's result has a parent of its own), and are refused at
the script's line. A question about it (``os.path.isabs(x)``, ``Path(x) == Path(y)``, a set of paths)
is refused too: the stand-in would answer it. Loaded by path by ``harness.py``; standard library
only.
"""

from __future__ import annotations

import genericpath
import os
import pathlib
import posixpath
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# other paths put in the stand-in's place: deeper with a suffix, and relative (a call may return either)
OTHERS = ("/tmp/run-matrix-other/a.b", "run-matrix-other/c")
MADE = (  # os.path's functions that make text of path text
    *("abspath", "basename", "commonpath", "commonprefix", "dirname", "expanduser", "expandvars"),
    *("join", "normcase", "normpath", "relpath", "split", "splitdrive", "splitext"),
)
ASKED = ("isabs",)  # os.path's questions about path text
PURE_MADE = ("parent", "parents", "name", "suffix", "suffixes", "stem", "parts", "anchor", "drive", "root")
PURE_MADE_BY = (
    *("with_name", "with_stem", "with_suffix", "relative_to", "joinpath", "__truediv__", "__rtruediv__"),
)
PURE_ASKED = ("is_absolute", "is_relative_to", "match", "is_reserved", "__eq__", "__hash__")
PURE_ORDER = ("__lt__", "__le__", "__gt__", "__ge__")
PATH_MADE_BY = ("absolute", "expanduser")  # Path's own, past PurePath's
EXAMPLES = "os.path.join(x, NAME), Path(x) / NAME, f'{x}/NAME'"


def install(trace: Any, form: str) -> None:
    """Each of ``os.path``'s and ``pathlib``'s functions above, checked when it is given a stand-in;
    ``form``: how a spec hands what a prepare call returns on (``returned.PREPARED_FORM``)."""
    # their own calls of each other (os.path's modules are frozen: their code names no file)
    modules = (posixpath, genericpath, pathlib)
    inside = {name for m in modules for name in (m.__file__, f"<frozen {m.__name__}>")}

    def checked(real: Callable[..., Any], what: str, asks: bool) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename
            held = [] if caller in inside or caller in trace.own_files else _held(trace, (args, kwargs))
            if held and asks:
                raise trace.refuse(
                    f"asks {what} of what {held[0][1]}() returns, which the path the call returns on the"
                    f" node would answer, not import: {form}"
                )
            result = real(*args, **kwargs)
            for stand_in, function in held:
                if not all(_alike(real, args, kwargs, result, stand_in, other) for other in OTHERS):
                    raise trace.refuse(
                        f"takes {what} of what {function}() returns, which gives another path for another"
                        f" result (import does not know the one the call returns on the node): {form},"
                        f" whole or with more joined to it ({EXAMPLES})"
                    )
            return result

        guarded.__name__ = getattr(real, "__name__", what)
        return guarded

    for name in (*MADE, *ASKED):
        setattr(posixpath, name, checked(getattr(posixpath, name), f"os.path.{name}()", name in ASKED))
    for owner, names in ((pathlib.PurePath, PURE), (pathlib.Path, PATH_MADE_BY)):
        for name in names:
            found = owner.__dict__.get(name)  # None: not in this Python's pathlib
            asks = name in PURE_ASKED or name in PURE_ORDER
            if isinstance(found, property) and found.fget is not None:
                setattr(owner, name, property(checked(found.fget, _shown(name), asks)))
            elif found is not None:
                setattr(owner, name, checked(found, _shown(name), asks))


PURE = (*PURE_MADE, *PURE_MADE_BY, *PURE_ASKED, *PURE_ORDER)


def _shown(name: str) -> str:
    operators = {"__truediv__": "Path / NAME", "__rtruediv__": "NAME / Path", "__eq__": "Path == Path"}
    orders = dict.fromkeys(PURE_ORDER, "the order of Paths")
    found = {**operators, **orders, "__hash__": "a hash of a Path (a key of a mapping, a member of a set)"}
    if name in found:
        return found[name]
    return f"Path.{name}" if name in PURE_MADE else f"Path.{name}()"


def _held(trace: Any, value: Any) -> list[tuple[str, str]]:
    """(stand-in, function) of each prepare call whose stand-in ``value``'s path text holds."""
    if not trace.stand_ins:
        return []  # most scripts: no prepare call recorded, no look at the arguments
    return list(dict.fromkeys(found for text in _texts(value) for found in trace.prepared_in(text)))


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield str.__str__(value)  # a returned.PreparedText as the plain text it is
    elif isinstance(value, os.PathLike):
        yield from _texts(os.fspath(value))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        yield from _texts(list(value.values()))


def _alike(real: Callable[..., Any], args: Any, kwargs: Any, result: Any, stand_in: str, other: str) -> bool:
    """Whether ``real`` given ``other`` in the stand-in's place gives ``result`` with ``other`` in it."""
    try:
        found = real(*_swapped(args, stand_in, other), **_swapped(kwargs, stand_in, other))
    except Exception:
        return False
    return bool(_plain(found, other, other) == _plain(result, stand_in, other))


def _swapped(value: Any, stand_in: str, other: str) -> Any:
    """``value`` with ``other`` in the stand-in's place, in each path text it holds."""
    if isinstance(value, str):
        return str.replace(value, stand_in, other)
    if isinstance(value, pathlib.PurePath):
        return type(value)(str.replace(str(value), stand_in, other))
    if isinstance(value, os.PathLike):
        return _swapped(os.fspath(value), stand_in, other)
    if isinstance(value, (list, tuple)):
        return type(value)(_swapped(item, stand_in, other) for item in value)
    if isinstance(value, dict):
        return {key: _swapped(item, stand_in, other) for key, item in value.items()}
    return value


def _plain(value: Any, stand_in: str, other: str) -> Any:
    """A result as plain values to compare, with ``other`` in the stand-in's place."""
    if isinstance(value, (str, pathlib.PurePath)):  # a PreparedText is text as a str is
        return (isinstance(value, str), str.replace(str(value), stand_in, other))
    if isinstance(value, Sequence):  # a tuple of parts, Path.parents
        return tuple(_plain(item, stand_in, other) for item in value)
    return value
