"""edit: set keys of a spec's text in place, keeping everything else byte for byte.

A spec is a file people write and comment; rewriting it whole would lose its comments, blank lines,
quoting and key order. Each value is spliced where PyYAML's marks put the node it replaces (or the
mapping it joins), written by the one YAML writer (``runner.spec.emit``, which reads back what it writes).
The result must load (``load.loads``) as the old data with exactly those keys changed; anything else
(a key reached through an alias, a value that is not a mapping on the way, a layout the splice gets
wrong) is refused at the key's line and the text is left as it is. Pure: text in, text out.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from runner.errors import Location, SpecError
from runner.spec import emit, load
from runner.spec.load import Key, dotted

_ANCHORED = "is an anchor used elsewhere (&/*): an edit would change both"
Edit = tuple[Key, Any]  # a key (its path of names) and the value it is to have


def edited(text: str, path: Path, edits: Sequence[Edit], hint: str = "") -> str:
    """``text`` with each key of ``edits`` set to its value (mappings created where missing)."""
    before = load.loads(text, path)  # a spec that does not load is refused as every command refuses it
    for key, value in edits:
        text = _set(text, path, key, value, hint)
    wanted = copy.deepcopy(before.data)
    for key, value in edits:
        _put(wanted, key, value)
    try:
        after = load.loads(text, path).data
    except SpecError:
        after = None
    if after != wanted:
        key = edits[0][0]
        raise _refused(path, _line(before, key), key, "would not read back as written", hint)
    return text


def _set(text: str, path: Path, key: Key, value: Any, hint: str) -> str:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is None:  # an empty file
        return (
            text
            + ("\n" if text and not text.endswith("\n") else "")
            + emit.dump({key[0]: _nested(key[1:], value)})
        )
    shared = _shared(root)
    node: yaml.Node = root
    name: yaml.Node | None = None
    for depth, part in enumerate(key):
        line = (name or node).start_mark.line + 1  # an alias's own line, not its anchor's
        if not isinstance(node, yaml.MappingNode):
            raise _refused(path, line, key[:depth], f"is a {_kind(node)}, not a mapping", hint)
        if id(node) in shared:
            raise _refused(path, line, key[:depth], _ANCHORED, hint)
        found = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
        if not found:
            return _insert(text, path, node, key[: depth + 1], _nested(key[depth + 1 :], value), hint)
        name, node = found[-1]
    assert name is not None
    if id(node) in shared:
        raise _refused(path, name.start_mark.line + 1, key, _ANCHORED, hint)
    return text[: name.end_mark.index] + ": " + emit.flow(value) + text[_end(text, node) :]


def _insert(text: str, path: Path, mapping: yaml.MappingNode, key: Key, value: Any, hint: str) -> str:
    """``text`` with ``key[-1]: value`` added as the last entry of ``mapping``."""
    if mapping.flow_style:
        close = mapping.end_mark.index - 1
        if text[close : close + 1] != "}":
            raise _refused(
                path, mapping.start_mark.line + 1, key[:-1], "ends where its marks do not say", hint
            )
        entry = f"{', ' if mapping.value else ''}{emit.key(key[-1])}: {emit.flow(value)}"
        return text[:close] + entry + text[close:]
    indent = " " * mapping.value[0][0].start_mark.column
    lines = "\n".join(indent + line if line else line for line in emit.dump({key[-1]: value}).splitlines())
    at = _end(text, mapping)
    if at == 0 or text[at - 1] == "\n":
        return text[:at] + lines + "\n" + text[at:]
    line_end = text.find("\n", at)  # after a comment that ends the mapping's last line
    if line_end < 0:
        return text + "\n" + lines + "\n"
    return text[:line_end] + "\n" + lines + text[line_end:]


def _end(text: str, node: yaml.Node) -> int:
    """Where ``node``'s own text ends: its last value's end, before the newlines a block scalar takes."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in " \t\r\n":
        end -= 1
    return end


def _shared(root: yaml.Node) -> set[int]:
    """The nodes reached more than once: an anchor's, which its aliases share."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            shared.add(id(node))
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack += [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return shared


def _nested(key: Key, value: Any) -> Any:
    for name in reversed(key):
        value = {name: value}
    return value


def _put(data: dict[str, Any], key: Key, value: Any) -> None:
    for name in key[:-1]:
        data = data.setdefault(name, {})
    data[key[-1]] = value


def _line(document: load.Document, key: Key) -> int | None:
    """The line of ``key``, else of the nearest mapping above it that the file writes."""
    found = [document.lines[key[:n]] for n in range(len(key), 0, -1) if key[:n] in document.lines]
    return found[0] if found else None


def _kind(node: yaml.Node) -> str:
    return "list" if isinstance(node, yaml.SequenceNode) else "single value"


def _refused(path: Path, line: int | None, key: Key, why: str, hint: str) -> SpecError:
    return SpecError.one(
        "edit",
        f"{'it' if key else 'the file'} {why}: cannot edit it in place",
        key=dotted(key),
        at=[Location(path, line)],
        hint=hint,
    )
