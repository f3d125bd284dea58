"""yaml_documents: a YAML document from outside read within the budgets of :mod:`runner.spec.documents`.

The events are read first (PyYAML's composer recurses, its event parser does not), then the composed
nodes are measured, aliases expanded, each node once; only then is a value constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

from runner.spec.documents import MAX_DEPTH, Unreadable, text_of

MAX_VALUES = 200_000  # values with aliases expanded (aliases of aliases multiply), as a spec's

# libyaml's parser when PyYAML has it; both parse events without recursing
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSES = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def node(
    text: str | bytes, limit: int, depth: int = MAX_DEPTH, values: int | None = MAX_VALUES
) -> yaml.Node | None:
    """The composed YAML node graph of ``text`` (None when empty), its nesting and values (aliases
    expanded) within budget; ``values=None`` for a reader whose walk keeps its own bound."""
    text = text_of(text, limit)
    try:
        _events_within(text, depth)  # the events first: composing recurses, an event stream does not
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
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
    if root is not None:
        _nodes_within(root, depth, values)
    return root


def data(text: str | bytes, limit: int, depth: int = MAX_DEPTH) -> Any:
    """The value of the YAML document ``text`` as ``yaml.safe_load`` builds it, within the budgets."""
    found = node(text, limit, depth)  # the data shares what aliases share: a walk of it multiplies
    if found is None:
        return None
    try:
        return yaml.SafeLoader("").construct_document(found)
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
