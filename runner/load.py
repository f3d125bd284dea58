"""load: YAML text -> plain data, remembering the line of every key.

Safe loading only. Duplicate keys are errors. The one custom tag is ``!delete``;
any other tag (``!!python/object`` included) is refused. Floats keep the text
they were written with, so ``0.00`` renders as ``0.00`` and not ``0.0``.

Budgets (a spec may be hostile): only regular files of at most ``MAX_FILE_BYTES`` are read;
the values built while loading, aliases expanded, are counted as they are built and stop at
``MAX_VALUES``, nesting at ``MAX_DEPTH`` (an alias that contains itself is named as such).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from runner.errors import Location, SpecError
from runner.paths import MAX_FILE_BYTES, read_text

Key = tuple[str, ...]
# Texts not (yet) on disk, by resolved path: candidates that port and import check before writing.
Documents = Mapping[Path, str]
NO_DOCUMENTS: Documents = MappingProxyType({})

MAX_VALUES = 200_000  # values built from one file, aliases expanded (a 1000-cell matrix spec: ~2000)
MAX_DEPTH = 64  # nesting of mappings and lists (specs nest about 6 deep)

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


def load_from(path: Path, documents: Documents) -> Document:
    """``path``'s text from ``documents`` when it is one of them (never cached), else from disk."""
    text = documents.get(path.resolve()) if documents else None
    return load(path) if text is None else loads(text, path)


def is_document(path: Path, documents: Documents) -> bool:
    return bool(documents) and path.resolve() in documents


@lru_cache(maxsize=4096)
def _load_cached(path: Path, mtime_ns: int, size: int) -> Document:
    return _load(path)


def _load(path: Path) -> Document:
    return loads(read_text(path), path)


def loads(text: str, path: Path) -> Document:
    if len(text) > MAX_FILE_BYTES:
        raise SpecError.one(
            "budget", f"the text is longer than {MAX_FILE_BYTES:,} characters", at=[Location(path)]
        )
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(text, path, exc) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_error(text, path, exc) from None
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
    try:
        data = builder.mapping(root, ())
    except RecursionError:  # a merge key (<<:) whose alias contains itself, beyond what is counted
        raise SpecError.one("budget", "a merge key (<<:) refers to itself", at=[Location(path)]) from None
    return Document(path, data, builder.lines)


# libyaml's parser when PyYAML has it (about ten times faster), the pure-Python one otherwise.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _syntax_error(text: str, path: Path, found: yaml.MarkedYAMLError) -> SpecError:
    """The pure-Python parser's account of a syntax error: it says what it found, libyaml does not.

    Only its event parser runs (it does not recurse, so deep nesting cannot overflow it);
    errors only the composer finds (an unknown alias) keep libyaml's account.
    """
    try:
        if "nesting depth" not in str(found.problem):  # the pure parser takes seconds to find that
            for _ in yaml.parse(text, Loader=yaml.SafeLoader):
                pass
    except yaml.MarkedYAMLError as exc:
        found = exc
    mark = found.problem_mark or found.context_mark
    line = mark.line + 1 if mark else None
    message = " ".join(str(part) for part in (found.context, found.problem) if part)
    return SpecError.one("yaml", f"not valid YAML: {message}", at=[Location(path, line)])


def _reader_error(text: str, path: Path, exc: yaml.reader.ReaderError) -> SpecError:
    """A character YAML does not allow (NUL, BEL, ...): say which, and on which line."""
    position = min(max(exc.position, 0), len(text))
    line = text.count("\n", 0, position) + 1
    character = exc.character if isinstance(exc.character, str) else chr(exc.character)
    return SpecError.one(
        "yaml",
        f"character {ord(character):#06x} is not allowed in YAML",
        at=[Location(path, line)],
        hint="remove it (control characters other than tab and newline cannot appear in a spec)",
    )


class _Builder:
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
