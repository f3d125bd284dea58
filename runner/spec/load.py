"""load: YAML text -> plain data, remembering the line of every key.

Safe loading only. Duplicate keys are errors. The one custom tag is ``!delete``;
any other tag (``!!python/object`` included) is refused. Floats keep the text
they were written with, so ``0.00`` renders as ``0.00`` and not ``0.0``.

Budgets (a spec may be hostile): only regular files of at most ``MAX_FILE_BYTES`` are read;
the values built while loading are counted (``runner.spec.yamlnodes``, which turns PyYAML's node
graph into data).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from runner.errors import Location, SpecError
from runner.memos import Table, resolved
from runner.spec.paths import MAX_FILE_BYTES, read_text
from runner.spec.yamlnodes import (
    DELETE,
    MAX_DEPTH,
    MAX_VALUES,
    Builder,
    Delete,
    Key,
    WrittenFloat,
    dotted,
    kind_of,
)

__all__ = [
    "DELETE",
    "MAX_DEPTH",
    "MAX_VALUES",
    "NO_DOCUMENTS",
    "Delete",
    "Document",
    "Documents",
    "Key",
    "WrittenFloat",
    "dotted",
    "load",
    "load_from",
    "loads",
    "walk",
]

# Texts not (yet) on disk, by resolved path: candidates that port and import check before writing.
Documents = Mapping[Path, str]
NO_DOCUMENTS: Documents = MappingProxyType({})


@dataclass(frozen=True)
class Document:
    """One loaded YAML file: its data and the line on which every key was written."""

    path: Path
    data: dict[str, Any]
    lines: dict[Key, int]

    def location(self, key: Key) -> Location:
        return Location(self.path, self.lines.get(key))


MAX_PARSED = 4096
_PARSED: Table[tuple[Path, int, int], Document] = Table(
    "runner.spec.load._PARSED",
    "stamped",
    "a file's parse by its real path, modification time and size: an edited file is a new key",
    MAX_PARSED,
)


def load(path: Path) -> Document:
    """Load one YAML mapping from ``path``; every failure is a :class:`SpecError`.

    A file is parsed once per content, however its path is spelt (``components/x.yaml``,
    ``nv/../components/x.yaml``): a base shared by a thousand cells costs one parse.
    Callers never mutate a Document's data (compose copies what it keeps).
    """
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is None:
        return _load(path)
    key = (resolved(path), stat.st_mtime_ns, stat.st_size)
    found = _PARSED.get(key)
    if found is None:  # parsed under the path asked for: its problems name the file as the spec did
        found = _PARSED.put(key, _load(path))
    return found if found.path == path else replace(found, path=path)


MAX_WRITTEN = 128  # texts kept: an import fits one folder's base and cases at a time
MAX_WRITTEN_CHARACTERS = 1 << 16  # a longer text (a spec is a few kB) is parsed each time it is asked for
_WRITTEN: Table[tuple[Path, str], Document] = Table(
    "runner.spec.load._WRITTEN",
    "stamped",
    "a text not on disk, parsed, by the path it stands for and the text itself: an edit is a new key",
    MAX_WRITTEN,
)


def load_from(path: Path, documents: Documents) -> Document:
    """``path``'s text from ``documents`` when it is one of them, else from disk. A text is parsed
    once however often it is asked for: an import composes each candidate it fits again after
    every edit, most of its files unchanged."""
    text = documents.get(resolved(path)) if documents else None
    if text is None:
        return load(path)
    if len(text) > MAX_WRITTEN_CHARACTERS:
        return loads(text, path)
    found = _WRITTEN.get((path, text))
    return found if found is not None else _WRITTEN.put((path, text), loads(text, path))


def is_document(path: Path, documents: Documents) -> bool:
    return bool(documents) and resolved(path) in documents


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
    builder = Builder(loader, path)
    if not isinstance(root, yaml.MappingNode):
        raise SpecError.one(
            "yaml",
            f"a spec must be a mapping of keys to values, not a {kind_of(root)}",
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


def walk(data: dict[str, Any], prefix: Key = ()) -> Iterator[tuple[Key, Any]]:
    """Every key of a nested mapping, parents before children, in the order written (depth first,
    with a stack of the mappings entered: a key deep down passes through one generator, not one per
    level)."""
    stack = [(prefix, iter(data.items()))]
    while stack:
        above, items = stack[-1]
        for name, value in items:
            key = (*above, name)
            yield key, value
            if isinstance(value, dict):
                stack.append((key, iter(value.items())))
                break
        else:
            stack.pop()
