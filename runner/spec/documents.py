"""documents: a document from outside (JSON or YAML) read within a size and a depth budget.

Every reader of text run-matrix did not write just now (a checkout's workflow, a trace a sandboxed
script wrote, a run's state record, a cache entry) goes through one function per format here. The
budgets are checked before the parser that could exceed them runs: the text's length first, then
its nesting, counted without recursion (JSON's brackets outside strings; YAML's events, then the
composed nodes with aliases expanded), so that neither Python's recursion limit nor memory is ever
what stops a hostile document. Each failure is :class:`Unreadable`, a ``ValueError`` with the
reason and, where the parser knows it, the line; a caller names the file and the format
(``x.yml does not parse as YAML: nests deeper than 100 levels``).

No TOML is read anywhere in run-matrix (``pyproject.toml`` is only searched for a name).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_DEPTH = 100  # nesting of lists and mappings: a trace nests about 8 deep, a workflow about 10
MAX_VALUES = 200_000  # YAML values with aliases expanded (aliases of aliases multiply), as a spec's

# a JSON string as json's scanner reads one; what is left outside strings holds every bracket it nests by
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
# libyaml's parser when PyYAML has it; both parse events without recursing
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSES = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class Unreadable(ValueError):
    """A document that is not one within the budgets: why, and on which line when that is known."""

    def __init__(self, reason: str, line: int | None = None, *, budget: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.budget = budget  # past a budget (size, depth, values), not a syntax error


def file_bytes(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (a FIFO would block, a device never
    end): OSError when it is none; a document read from them meets ``limit`` as its size budget."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return stream.read(limit + 1)


def json_data(text: str | bytes, limit: int, depth: int = MAX_DEPTH) -> Any:
    """The value of the JSON document ``text``: at most ``limit`` characters, nesting ``depth`` deep."""
    text = _text(text, limit)
    _within_depth(_JSON_STRING.sub("", text), depth)
    try:
        return json.loads(text)
    except ValueError as error:  # json.JSONDecodeError, and a number of more than 4,300 digits
        line = error.lineno if isinstance(error, json.JSONDecodeError) else None
        raise Unreadable(str(error), line) from None


def yaml_node(
    text: str | bytes, limit: int, depth: int = MAX_DEPTH, values: int | None = MAX_VALUES
) -> yaml.Node | None:
    """The composed YAML node graph of ``text`` (None when empty), its nesting and values (aliases
    expanded) within budget; ``values=None`` for a reader whose walk keeps its own bound."""
    text = _text(text, limit)
    try:
        _events_within(text, depth)  # the events first: composing recurses, an event stream does not
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        if "maximum nesting depth" in str(error.problem):  # libyaml's own limit, past ours
            raise Unreadable(f"nests deeper than {depth} levels", _line(error), budget=True) from None
        error = _told_in_full(text, error)
        raise Unreadable(str(error.problem or error.context), _line(error)) from None
    except yaml.reader.ReaderError as error:
        character = error.character if isinstance(error.character, str) else chr(error.character)
        raise Unreadable(f"character {ord(character):#06x} is not allowed in YAML") from None
    if node is not None:
        _nodes_within(node, depth, values)
    return node


def yaml_data(text: str | bytes, limit: int, depth: int = MAX_DEPTH) -> Any:
    """The value of the YAML document ``text`` as ``yaml.safe_load`` builds it, within the budgets."""
    node = yaml_node(text, limit, depth)  # the data shares what aliases share: a walk of it multiplies
    if node is None:
        return None
    try:
        return yaml.SafeLoader("").construct_document(node)
    except yaml.YAMLError as error:  # a bad timestamp, a tag safe loading does not know
        mark = getattr(error, "problem_mark", None)
        reason = str(getattr(error, "problem", None) or error)
        raise Unreadable(reason, mark.line + 1 if mark else None) from None


def _told_in_full(text: str, found: yaml.MarkedYAMLError) -> yaml.MarkedYAMLError:
    """The pure-Python parser's account of a syntax error (libyaml's does not say what it found).
    Its event parser does not recurse: the text's depth cannot overflow it."""
    try:
        for _ in yaml.parse(text, Loader=yaml.SafeLoader):
            pass
    except yaml.MarkedYAMLError as error:
        return error
    return found  # one only the composer finds (an unknown alias): libyaml's account


def _line(error: yaml.MarkedYAMLError) -> int | None:
    mark = error.problem_mark or error.context_mark
    return mark.line + 1 if mark else None


def _text(text: str | bytes, limit: int) -> str:
    if len(text) > limit:
        raise Unreadable(f"larger than {limit:,} bytes", budget=True)
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"not UTF-8: byte {text[error.start]:#x} at offset {error.start}") from None


def _within_depth(text: str, depth: int) -> None:
    level = 0
    for bracket in _NOT_A_BRACKET.sub("", text):
        level += 1 if bracket in "[{" else -1
        if level > depth:
            raise Unreadable(f"nests deeper than {depth} levels", budget=True)


def _events_within(text: str, depth: int) -> None:
    level = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, _OPENS):
            level += 1
            if level > depth:
                line = event.start_mark.line + 1 if event.start_mark else None
                raise Unreadable(f"nests deeper than {depth} levels", line, budget=True)
        elif isinstance(event, _CLOSES):
            level -= 1


def _nodes_within(root: yaml.Node, depth: int, values: int | None) -> None:
    """The node graph's nesting and size with aliases expanded, each node measured once (an alias
    of an alias multiplies the size, not the work); an alias inside the collection it names nests
    without end."""
    height: dict[int, int] = {}  # by node: the collections nested at and under it
    size: dict[int, int] = {}  # by node: the values it expands to, counted up to the budget
    open_ids: set[int] = set()  # the collections being measured, outermost first
    waiting: list[tuple[yaml.Node, bool]] = [(root, False)]
    while waiting:
        node, measured = waiting.pop()
        key, children = id(node), _children(node)
        if measured:
            open_ids.discard(key)
            nests = isinstance(node, yaml.CollectionNode)
            height[key] = nests + max((height[id(child)] for child in children), default=0)
            size[key] = min(1 + sum(size[id(child)] for child in children), (values or 0) + 1)
            _within(node, height[key], depth, size[key], values)
        elif key in open_ids:
            raise Unreadable("an alias refers to a collection that contains it", _at(node), budget=True)
        elif key not in height:
            open_ids.add(key)
            waiting += [(node, True), *((child, False) for child in children)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _within(node: yaml.Node, height: int, depth: int, size: int, values: int | None) -> None:
    if height > depth:
        raise Unreadable(f"nests deeper than {depth} levels", _at(node), budget=True)
    if values is not None and size > values:
        expanded = f"expands to more than {values:,} values (aliases are expanded where used)"
        raise Unreadable(expanded, _at(node), budget=True)


def _at(node: yaml.Node) -> int | None:
    return node.start_mark.line + 1 if node.start_mark else None
