"""emit: run-matrix's one YAML writer: the text of a spec or component, with comments (import,
port, upgrade and ``presets sync`` write through it), and of a shipped data file that is no spec
(``ci sync``'s ``miles/ci/``: :func:`plain`).

Values are written so that run-matrix reads back exactly what the script launched: a flag value
is a :class:`Text` that must load as the same text (``0.70`` stays ``0.70``, ``true`` is quoted
so it does not become a switch), other strings load as strings, and every literal ``${`` is
written ``$${`` so the resolver leaves it alone (secret references stay shell references).
Each scalar is checked by loading it back; nothing is guessed about YAML's rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from runner.errors import SpecError
from runner.memos import remember
from runner.spec.load import DELETE, Key, loads

INDENT = "  "
WIDTH = 110  # the longest line a list of mappings is written on
SPACED = ("ci", "matrix", "prepare", "args", "env", "expect")  # top-level sections set off by a blank line
FLOW = ("match", "band")  # small mappings written on one line
Comments = Mapping[Key, str]  # a comment line written above the key


class Text(str):
    """A scalar that must read back as exactly this text; a number may stay a number."""


class Expression(str):
    """A ``${...}`` reference written as it is, for the resolver (any other ``${`` is escaped)."""


def flag_value(values: Sequence[str]) -> Any:
    """What a spec writes for a flag: ``true`` for a switch, one value, or a list of them."""
    if not values:
        return True
    return Text(values[0]) if len(values) == 1 else [Text(v) for v in values]


def dump(data: Mapping[str, Any], comments: Comments | None = None, header: Sequence[str] = ()) -> str:
    comments = comments or {}
    lines = _header(header)
    for index, (name, value) in enumerate(data.items()):
        if index and name in SPACED:
            lines.append("")
        lines += _entry((name,), value, comments)
    return "\n".join(lines) + "\n"


def plain(data: Mapping[str, Any], header: Sequence[str] = (), width: int = 120) -> str:
    """A data file that is no spec, as PyYAML writes it (block style, keys in their order, lines
    folded at ``width``): nothing resolves it, so a ``${`` in it stays as it is (a fact about
    miles' CI such as ``${MILES_ROOT}``), and it is written as ``yaml.safe_load`` reads it back."""
    body = yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=width)
    return "".join(f"{line}\n" for line in _header(header)) + body


def _header(header: Sequence[str]) -> list[str]:
    """The comment lines above a file's first key, one per line of ``header``."""
    return [f"# {line}" if line else "#" for text in header for line in (text.splitlines() or [""])]


def _entry(key: Key, value: Any, comments: Comments) -> Iterator[str]:
    indent = INDENT * (len(key) - 1)
    if key in comments:
        yield f"{indent}# {comments[key]}"
    head = f"{indent}{_key(key[-1])}:"
    if key[-1] in FLOW and isinstance(value, Mapping):
        yield f"{head} {{{', '.join(f'{_key(k)}: {scalar(v)}' for k, v in value.items())}}}"
    elif isinstance(value, Mapping) and value:
        yield head
        for name, child in value.items():
            yield from _entry((*key, name), child, comments)
    elif isinstance(value, Mapping):
        yield f"{head} {{}}"
    elif isinstance(value, list) and _long(head, value):
        yield head
        for item in value:  # each mapping a block item: "- " in its first line's indent
            lines = [
                line for name, child in item.items() for line in _entry((*key, "-", name), child, comments)
            ]
            dash = INDENT * len(key)
            yield dash + "- " + lines[0].removeprefix(dash + INDENT)
            yield from lines[1:]
    elif isinstance(value, list):
        yield f"{head} {_flow(value)}"
    else:
        yield f"{head} {scalar(value)}"


def flow(value: Any) -> str:
    """``value`` on one line (a mapping or list in flow style, else a scalar), reading back the same."""
    return _flow_item(value)


def key(name: str) -> str:
    """``name`` as a mapping key that reads back the same."""
    return _key(name)


def _long(head: str, items: list[Any]) -> bool:
    """A list of mappings too long for one line (a hook with its arguments and its stop): written as
    a block, an item each."""
    mappings = bool(items) and all(isinstance(item, Mapping) and item for item in items)
    return mappings and len(f"{head} {_flow(items)}") > WIDTH


def scalar(value: Any) -> str:
    if value is DELETE:
        return "!delete"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    text = _escaped(value)
    for candidate in (text, _quoted(text)):
        if _reads_back(f"v: {candidate}", [value]):
            return candidate
    raise _cannot(text)


def _float(value: float) -> str:
    """A float as YAML 1.1 reads it back (``1e-06`` would load as text: it needs a dot)."""
    mantissa, e, exponent = repr(value).partition("e")
    text = f"{mantissa}{'' if '.' in mantissa else '.0'}{e}{exponent}" if e else repr(value)
    if not _reads_back(f"v: {text}", [value]):
        raise _cannot(text)
    return text


def _flow(items: list[Any]) -> str:
    nested = any(isinstance(item, (list, Mapping)) for item in items)
    plain = [_flow_item(item) for item in items]
    for candidates in [plain] if nested else [plain, [_quoted(_escaped(item)) for item in items]]:
        written = f"[{', '.join(candidates)}]"
        if _reads_back(f"v: {written}", items):
            return written
    raise _cannot(str(items))


def _flow_item(item: Any) -> str:
    """One item of a flow list: a list or a mapping (a check's arguments hold them) on one line too."""
    if isinstance(item, list):
        return _flow(item)
    if isinstance(item, Mapping):
        return "{" + ", ".join(f"{_key(k)}: {_flow_item(v)}" for k, v in item.items()) + "}"
    return scalar(item)


def _key(name: str) -> str:
    loaded = _load(f"{name}: 0")
    return name if loaded is not None and list(loaded) == [name] else _quoted(name)


def _reads_back(document: str, wanted: list[Any]) -> bool:
    """Whether ``document``'s ``v`` loads as ``wanted`` (a :class:`Text` as its text, whatever its type)."""
    loaded = _load(document)
    got = loaded["v"] if loaded is not None else None
    got = got if isinstance(got, list) or len(wanted) != 1 else [got]
    if not isinstance(got, list) or len(got) != len(wanted):
        return False
    return all(_same(g, w) for g, w in zip(got, wanted, strict=True))


def _same(got: Any, wanted: Any) -> bool:
    if isinstance(wanted, list):
        return isinstance(got, list) and len(got) == len(wanted) and all(map(_same, got, wanted))
    if isinstance(wanted, Mapping):
        return (
            isinstance(got, dict)
            and list(got) == list(wanted)
            and all(_same(got[k], wanted[k]) for k in wanted)
        )
    if isinstance(wanted, float) and not isinstance(wanted, Text):
        return isinstance(got, float) and got == wanted
    if isinstance(wanted, (bool, int)) or wanted is None:
        return type(got) is type(wanted) and got == wanted
    if isinstance(wanted, Text):
        return not isinstance(got, bool) and got is not None and str(got) == _escaped(wanted)
    if isinstance(wanted, float):  # the loader keeps how a float was written: 0.70 stays 0.70
        return isinstance(got, float) and str(got) == str(wanted)
    return isinstance(got, str) and got == _escaped(wanted)


def _escaped(value: Any) -> str:
    return str(value) if isinstance(value, Expression) else str(value).replace("${", "$${")


# a suite import writes the same flags and keys thousands of times
@remember("pure", "a scalar's text as run-matrix loads it (only read)", maxsize=8192)
def _load(document: str) -> dict[str, Any] | None:
    """``document`` as run-matrix loads it (shared: only read), or None where it does not load."""
    try:
        return loads(document + "\n", Path("<import>")).data
    except SpecError:
        return None


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'" if "\n" not in text else json.dumps(text)


def _cannot(text: str) -> SpecError:
    return SpecError.one("import", f"cannot write {text!r} as YAML that reads back the same")
