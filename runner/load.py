"""load: YAML text -> plain data, remembering the line of every key.

Safe loading only. Duplicate keys are errors. The one custom tag is ``!delete``;
any other tag (``!!python/object`` included) is refused. Floats keep the text
they were written with, so ``0.00`` renders as ``0.00`` and not ``0.0``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from runner.errors import Location, SpecError

Key = tuple[str, ...]

DELETE_TAG = "!delete"
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


@dataclass(frozen=True)
class Document:
    """One loaded YAML file: its data and the line on which every key was written."""

    path: Path
    data: dict[str, Any]
    lines: dict[Key, int]

    def location(self, key: Key) -> Location:
        return Location(self.path, self.lines.get(key))


def dotted(key: Key) -> str:
    return ".".join(key)


def load(path: Path) -> Document:
    """Load one YAML mapping from ``path``; every failure is a :class:`SpecError`.

    A file is parsed once per content: a base shared by a thousand cells costs one parse.
    Callers never mutate a Document's data (compose copies what it keeps).
    """
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None:
        return _load(path)
    return _load_cached(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4096)
def _load_cached(path: Path, mtime_ns: int, size: int) -> Document:
    return _load(path)


def _load(path: Path) -> Document:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError.one("missing-file", f"no such file: {path}", at=[Location(path)]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError.one("yaml", f"cannot read {path}: {exc}", at=[Location(path)]) from None
    return loads(text, path)


def loads(text: str, path: Path) -> Document:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError:
        raise _syntax_error(text, path) from None
    finally:
        loader.dispose()
    if root is None:
        return Document(path, {}, {})
    builder = _Builder(loader, path)
    if not isinstance(root, yaml.MappingNode):
        raise SpecError.one(
            "yaml",
            f"a spec must be a mapping of keys to values, not a {_kind(root)}",
            at=[Location(path, root.start_mark.line + 1)],
        )
    data = builder.mapping(root, ())
    return Document(path, data, builder.lines)


# libyaml's parser when PyYAML has it (about ten times faster), the pure-Python one otherwise.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _syntax_error(text: str, path: Path) -> SpecError:
    """The pure-Python parser's account of a syntax error: it says what it found, libyaml does not."""
    try:
        yaml.SafeLoader(text).get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        message = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        return SpecError.one("yaml", f"not valid YAML: {message}", at=[Location(path, line)])
    return SpecError.one("yaml", "not valid YAML", at=[Location(path)])


class _Builder:
    """Walks the node graph PyYAML composed, building data and the line table."""

    def __init__(self, loader: yaml.SafeLoader, path: Path) -> None:
        self.loader = loader
        self.path = path
        self.lines: dict[Key, int] = {}

    def at(self, node: yaml.Node) -> Location:
        return Location(self.path, node.start_mark.line + 1)

    def mapping(self, node: yaml.MappingNode, key: Key) -> dict[str, Any]:
        self.loader.flatten_mapping(node)  # honour YAML merge keys (<<: *anchor)
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = self.key_name(key_node, key)
            child = (*key, name)
            if name in result:
                raise SpecError.one(
                    "duplicate-key",
                    f"key {name!r} is written twice in one mapping",
                    key=dotted(child),
                    at=[Location(self.path, self.lines[child]), self.at(key_node)],
                    hint="YAML keeps only the last one; delete one of them.",
                )
            self.lines[child] = key_node.start_mark.line + 1
            result[name] = self.value(value_node, child)
        return result

    def key_name(self, node: yaml.Node, parent: Key) -> str:
        value = self.value(node, parent) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(value, str):
            written = node.value if isinstance(node, yaml.ScalarNode) else _kind(node)
            raise SpecError.one(
                "yaml",
                f"keys must be strings; {written!r} reads as {type(value).__name__}",
                key=dotted(parent),
                at=[self.at(node)],
                hint=f"quote it: '{written}':",
            )
        return value

    def value(self, node: yaml.Node, key: Key) -> Any:
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
        if node.tag not in _STANDARD_TAGS:
            raise SpecError.one(
                "yaml",
                f"tag {node.tag!r} is not allowed: specs are plain data (the only custom tag is !delete)",
                key=dotted(key),
                at=[self.at(node)],
            )
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, key)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, key) for item in node.value]
        value = self.loader.construct_object(node, deep=True)
        if isinstance(value, float):
            return WrittenFloat(value, node.value)
        return value


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "list" if isinstance(node, yaml.SequenceNode) else "scalar"


def walk(data: dict[str, Any], prefix: Key = ()) -> Iterator[tuple[Key, Any]]:
    """Every key of a nested mapping, parents before children."""
    for name, value in data.items():
        key = (*prefix, name)
        yield key, value
        if isinstance(value, dict):
            yield from walk(value, key)
