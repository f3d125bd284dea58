"""The flag catalog: every flag of one miles version, with its aliases, type, choices and arity.

Shipped as JSON under ``miles/flags/<date>-<commit>.json`` (compact: one list per flag) and
read only when a rule first asks (a few milliseconds, once per process and version). A flag is a
named tuple: a catalog holds thousands, and a cold ``validate`` reads two.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, NamedTuple

Kind = Literal["value", "switch", "other"]  # other: a custom argparse action, arity unknown
Program = Literal["miles", "megatron", "sglang", "router"]
FORMAT = 1
COLUMNS = ("name", "program", "kind", "type", "choices", "nargs", "aliases", "default", "where", "same_as")


class Flag(NamedTuple):
    name: str  # canonical spelling, without the leading --
    program: str
    kind: Kind
    type: str = "str"  # int, float, str, or unknown (a converter the catalog cannot judge)
    choices: tuple[Any, ...] | None = None
    nargs: str | int | None = None
    aliases: tuple[str, ...] = ()
    default: Any = None
    where: str = ""  # file:line in the source tree it was read from
    same_as: str | None = None  # a deprecated spelling that sets what this flag names (SGLang's nsa -> dsa)

    def describe(self) -> str:
        """One line: spelling, program, kind or type, arity, choices, aliases, and where it was read."""
        parts = [f"--{self.name}", f"[{self.program}]", self.kind if self.kind != "value" else self.type]
        if self.nargs is not None:
            parts.append(f"nargs={self.nargs}")
        if self.choices is not None:
            parts.append("choices: " + ", ".join(map(str, self.choices)))
        if self.aliases:
            parts.append("aliases: " + ", ".join(f"--{a}" for a in self.aliases))
        if self.same_as:
            parts.append(f"deprecated for --{self.same_as}")
        return " ".join(parts) + f"  ({self.where})"

    def to_row(self) -> list[Any]:
        return [
            self.name,
            self.program,
            self.kind,
            self.type,
            list(self.choices) if self.choices is not None else None,
            self.nargs,
            list(self.aliases),
            self.default,
            self.where,
            self.same_as,
        ]

    @classmethod
    def from_row(cls, row: list[Any]) -> Flag:
        name, program, kind, type_, choices, nargs, aliases, default, where, same_as = row
        choices = tuple(choices) if choices is not None else None
        return cls(name, program, kind, type_, choices, nargs, tuple(aliases), default, where, same_as)


@dataclass(frozen=True)
class Catalog:
    """Every flag a miles version's launch accepts; ``sources`` names what it was read from."""

    miles: str  # the miles commit (short) or a checkout path
    date: str  # the commit's date (YYYY-MM-DD); picks the newest catalog
    sources: dict[str, str]  # program -> "what, at which version"
    flags: tuple[Flag, ...] = field(repr=False)
    origin: str = ""  # where this catalog was loaded from, for messages
    skipped: tuple[str, ...] = ()  # a checkout's arguments left out, each "file:line: why" (no flag name)

    @cached_property
    def by_name(self) -> dict[str, Flag]:
        """Every spelling (canonical and aliases) -> its flag, under the Megatron backend."""
        return self.index("megatron")

    def index(self, backend: str) -> dict[str, Flag]:
        """Every spelling -> its flag, as the backend's parser has them: Megatron's parser, or the
        FSDP backend's own (``--train-backend fsdp``), each with miles' and SGLang's flags added."""
        if backend in self._indexes:
            return self._indexes[backend]
        first = "fsdp" if backend == "fsdp" else "megatron"
        order = {first: 0, "miles": 1, "sglang": 2, "router": 3}
        index: dict[str, Flag] = {}
        for flag in sorted((f for f in self.flags if f.program in order), key=lambda f: order[f.program]):
            for name in (flag.name, *flag.aliases):
                index.setdefault(name, flag)
        self._indexes[backend] = index
        return index

    @cached_property
    def _indexes(self) -> dict[str, dict[str, Flag]]:
        return {}

    @cached_property
    def memo(self) -> dict[Any, Any]:
        """Verdicts on (name, value) already judged: a thousand cells share most of their flags."""
        return {}

    def lookup(self, name: str, backend: str = "megatron") -> Flag | None:
        return self.index(backend).get(name)

    def canonical(self, name: str, backend: str = "megatron") -> str:
        flag = self.index(backend).get(name)
        return flag.name if flag else name

    def names(self, backend: str = "megatron") -> Iterable[str]:
        return self.index(backend).keys()

    def extended(self, more: tuple[Flag, ...], source: tuple[str, str]) -> Catalog:
        """This catalog with flags read elsewhere (a branch's by hand, a custom function's module), and
        ``source`` (its name, what it is) among its sources; a spelling it has wins."""
        if not more:
            return self
        taken = {spelling for flag in self.flags for spelling in (flag.name, *flag.aliases)}
        added = tuple(merged((), (f for f in more if f.name not in taken)))
        return replace(self, sources={**self.sources, source[0]: source[1]}, flags=(*self.flags, *added))

    def to_json(self) -> str:
        data = {
            "format": FORMAT,
            "miles": self.miles,
            "date": self.date,
            "sources": self.sources,
            "columns": list(COLUMNS),
        }
        ordered = sorted(self.flags, key=lambda f: (f.program, f.name))
        rows = ",\n".join(json.dumps(flag.to_row(), default=str) for flag in ordered)
        head = json.dumps(data, indent=1)
        return head[:-2] + f',\n "flags": [\n{rows}\n]\n}}\n'

    @classmethod
    def from_json(cls, text: str, origin: str = "") -> Catalog:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"catalog format {data.get('format')!r}, expected {FORMAT}")
        flags = tuple(Flag.from_row(row) for row in data["flags"])
        return cls(data["miles"], data["date"], dict(data["sources"]), flags, origin)


def merged(first: Iterable[Flag], then: Iterable[Flag]) -> Iterator[Flag]:
    """Flags as argparse ends up with them: a spelling already taken keeps its first definition
    (miles' ``reset_arg`` only changes the default of a Megatron flag it finds)."""
    taken: set[str] = set()
    for flag in (*first, *then):
        spellings = (flag.name, *flag.aliases)
        if flag.name in taken:
            continue
        free = tuple(a for a in flag.aliases if a not in taken)
        taken.update(spellings)
        yield flag._replace(aliases=free)
