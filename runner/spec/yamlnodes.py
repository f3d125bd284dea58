"""yamlnodes: PyYAML's node graph -> plain data and the line of every key, within budgets.

The values built, aliases expanded, are counted as they are built and stop at ``MAX_VALUES``,
nesting at ``MAX_DEPTH`` (an alias that contains itself is named as such). Duplicate keys are
errors; ``!delete`` is the one custom tag; floats keep the text they were written with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from runner.errors import Location, SpecError

Key = tuple[str, ...]

MAX_VALUES = 200_000  # values built from one file, aliases expanded (a 1000-cell matrix spec: ~2000)
MAX_DEPTH = 64  # nesting of mappings and lists (specs nest about 6 deep)

DELETE_TAG = "!delete"
_STR = "tag:yaml.org,2002:str"
_STANDARD_TAGS = {
    "tag:yaml.org,2002:" + name for name in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")
}


class Delete:
    """The value of ``key: !delete``: remove that key from what is extended."""

    _instance: Delete | None = None

    def __new__(cls) -> Delete:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return DELETE_TAG


DELETE = Delete()


class WrittenFloat(float):
    """A float that renders as it was written (``0.70`` stays ``0.70``)."""

    text: str

    def __new__(cls, value: float, text: str) -> WrittenFloat:
        written = super().__new__(cls, value)
        written.text = text
        return written

    def __str__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[type[WrittenFloat], tuple[float, str]]:
        return (WrittenFloat, (float(self), self.text))


def dotted(key: Key) -> str:
    return ".".join(key)


class Builder:
    """Walks the node graph PyYAML composed, building data and the line table."""

    def __init__(self, loader: yaml.SafeLoader, path: Path) -> None:
        self.loader = loader
        self.path = path
        self.lines: dict[Key, int] = {}
        self.built = 0  # values built so far, aliases expanded: the budget is counted here
        self.open: list[yaml.Node] = []  # the collections being built, outermost first

    def at(self, node: yaml.Node) -> Location:
        return Location(self.path, node.start_mark.line + 1)

    def mapping(self, node: yaml.MappingNode, key: Key) -> dict[str, Any]:
        own = len(node.value)
        try:
            self.loader.flatten_mapping(node)  # honour YAML merge keys (<<: *anchor)
        except yaml.MarkedYAMLError as exc:
            raise SpecError.one(
                "yaml", f"not valid YAML: {exc.problem}", key=dotted(key), at=[self.at(node)]
            ) from None
        merged = len(node.value) - own  # merged pairs come first; the mapping's own keys override them
        result: dict[str, Any] = {}
        own_names: set[str] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            name = self.key_name(key_node, key)
            child = (*key, name)
            if name in own_names:
                raise SpecError.one(
                    "duplicate-key",
                    f"key {name!r} is written twice in one mapping",
                    key=dotted(child),
                    at=[Location(self.path, self.lines[child]), self.at(key_node)],
                    hint="YAML keeps only the last one; delete one of them.",
                )
            if index >= merged:
                own_names.add(name)
            self.lines[child] = key_node.start_mark.line + 1
            result[name] = self.value(value_node, child)
        return result

    def key_name(self, node: yaml.Node, parent: Key) -> str:
        value = self.value(node, parent) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(value, str):
            written = node.value if isinstance(node, yaml.ScalarNode) else kind_of(node)
            raise SpecError.one(
                "yaml",
                f"keys must be strings; {written!r} reads as {type(value).__name__}",
                key=dotted(parent),
                at=[self.at(node)],
                hint=f"quote it: '{written}':",
            )
        return value

    def value(self, node: yaml.Node, key: Key) -> Any:
        self.built += 1
        if self.built > MAX_VALUES:
            raise SpecError.one(
                "budget",
                f"the file expands to more than {MAX_VALUES:,} values (aliases are expanded where used)",
                key=dotted(key),
                at=[Location(self.path, self.lines[key]) if key in self.lines else self.at(node)],
                hint="an alias of an alias multiplies: write the values out, or use extends:",
            )
        if isinstance(node, yaml.CollectionNode):
            return self.collection(node, key)
        return self.scalar(node, key)

    def collection(self, node: yaml.CollectionNode, key: Key) -> Any:
        if any(node is outer for outer in self.open):
            raise SpecError.one(
                "yaml",
                "an alias refers to a collection that contains it",
                key=dotted(key),
                at=[self.at(node)],
            )
        if len(self.open) >= MAX_DEPTH:
            raise SpecError.one(
                "budget", f"values nest deeper than {MAX_DEPTH} levels", key=dotted(key), at=[self.at(node)]
            )
        self.check_tag(node, key)
        self.open.append(node)
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, key)
            return [self.value(item, key) for item in node.value]
        finally:
            self.open.pop()

    def check_tag(self, node: yaml.Node, key: Key) -> None:
        if node.tag not in _STANDARD_TAGS:
            raise SpecError.one(
                "yaml",
                f"tag {node.tag!r} is not allowed: specs are plain data (the only custom tag is !delete)",
                key=dotted(key),
                at=[self.at(node)],
            )

    def scalar(self, node: yaml.Node, key: Key) -> Any:
        if node.tag == DELETE_TAG:
            if not (isinstance(node, yaml.ScalarNode) and node.value == ""):
                raise SpecError.one(
                    "yaml",
                    "!delete takes no value",
                    key=dotted(key),
                    at=[self.at(node)],
                    hint="write `key: !delete` on its own.",
                )
            return DELETE
        if node.tag == _STR:  # most scalars: the text as written (what the constructor would return)
            return node.value
        self.check_tag(node, key)
        try:
            value = self.loader.construct_object(node, deep=True)
        except (ValueError, OverflowError, yaml.MarkedYAMLError) as exc:  # 2026-02-30, a bad timestamp
            raise SpecError.one(
                "yaml",
                f"{node.value!r} is not a valid {node.tag.rpartition(':')[2]}: {exc}",
                key=dotted(key),
                at=[self.at(node)],
                hint="quote it to keep it as text",
            ) from None
        if isinstance(value, float):
            return WrittenFloat(value, node.value)
        return value


def kind_of(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "list" if isinstance(node, yaml.SequenceNode) else "scalar"
