"""Reading argparse definitions from Python source without running it.

A small evaluator over the AST: literals, module-level constants, enum members, list
concatenation, f-strings, ``list(...)``/``sorted(...)``, ``X.keys()`` and one-generator
comprehensions over enums. Anything else is :class:`Unknown`, and the caller records the
flag with what it could read (a choice list it cannot read is no choice list, never a guess).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.knowledge.checkout import Tree, parsed

MAX_DEPTH = 40  # constants that refer to constants; a cycle or a deep chain is Unknown


class Unknown(Exception):
    """The value cannot be known without running the code."""


@dataclass(frozen=True)
class TypeRef:
    """A type named in source: ``int``, ``float``, ``str``, ``bool``, an enum, or another callable."""

    name: str


@dataclass(frozen=True)
class EnumClass:
    name: str
    members: tuple[tuple[str, Any], ...]  # (member name, value)


@dataclass(frozen=True)
class EnumMember:
    name: str
    value: Any


@dataclass(frozen=True)
class Module:
    """One parsed source file: its tree and its top-level names."""

    path: Path
    tree: ast.Module
    label: str  # the path as catalogs cite it: relative to its source tree
    constants: dict[str, ast.expr] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)

    @classmethod
    def parse(cls, path: Path, root: Path | None = None) -> Module:
        """``path`` parsed; below ``root`` (a checkout: a source tree from elsewhere) it is read through
        the door, bounded and kept in the tree."""
        if root is not None:
            tree = parsed(Tree.at(root), path.relative_to(root).as_posix())
        else:  # run-matrix's own file (sync's SGLang prefixes)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        label = str(path.relative_to(root)) if root else path.name
        constants: dict[str, ast.expr] = {}
        classes: dict[str, ast.ClassDef] = {}
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                constants[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                constants[node.target.id] = node.value
            elif isinstance(node, ast.ClassDef):
                classes[node.name] = node
        return cls(path, tree, label, constants, classes)

    def function(self, qualname: str) -> ast.FunctionDef | None:
        """A function or method by dotted name (``ServerArgs.add_cli_args``)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef) and qualname.startswith(node.name + "."):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == qualname.split(".", 1)[1]:
                        return item
            if isinstance(node, ast.FunctionDef) and node.name == qualname:
                return node
        return None


_BUILTIN_TYPES = {"int", "float", "str", "bool"}
_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "enum.Enum", "enum.IntEnum", "enum.StrEnum"}


class Scope:
    """Names an expression may refer to: local bindings, then the modules' constants and classes."""

    def __init__(self, modules: list[Module], bindings: dict[str, Any] | None = None) -> None:
        self.modules = modules
        self.bindings = dict(bindings or {})
        self._depth = 0

    def with_bindings(self, bindings: dict[str, Any]) -> Scope:
        return Scope(self.modules, {**self.bindings, **bindings})

    def class_def(self, name: str) -> tuple[ast.ClassDef, Module] | None:
        for module in self.modules:
            if name in module.classes:
                return module.classes[name], module
        return None

    def enum(self, name: str) -> EnumClass | None:
        found = self.class_def(name)
        if not found or not any(_dotted(base) in _ENUM_BASES for base in found[0].bases):
            return None
        members = []
        for item in found[0].body:
            if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                try:
                    members.append((item.targets[0].id, self.value(item.value)))
                except Unknown:
                    members.append((item.targets[0].id, item.targets[0].id))
        return EnumClass(name, tuple(members))

    def value(self, node: ast.expr) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise Unknown("too deep")
            return self._value(node)
        finally:
            self._depth -= 1

    def _value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [v for item in node.elts for v in self._items(item)]
        if isinstance(node, ast.Dict):
            return {
                self.value(k): self.value(v)
                for k, v in zip(node.keys, node.values, strict=True)
                if k is not None
            }
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.value(node.left) + self.value(node.right)
        if isinstance(node, ast.JoinedStr):
            return "".join(
                str(self.value(v.value if isinstance(v, ast.FormattedValue) else v)) for v in node.values
            )
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._comprehension(node)
        if isinstance(node, ast.IfExp):
            raise Unknown("a conditional")
        raise Unknown(type(node).__name__)

    def _items(self, node: ast.expr) -> list[Any]:
        if isinstance(node, ast.Starred):
            return list(_iterate(self.value(node.value)))
        return [self.value(node)]

    def _name(self, name: str) -> Any:
        if name in self.bindings:
            return self.bindings[name]
        if name in _BUILTIN_TYPES:
            return TypeRef(name)
        for module in self.modules:
            if name in module.constants:
                return self.value(module.constants[name])
        enum = self.enum(name)
        if enum:
            return enum
        raise Unknown(name)

    def _attribute(self, node: ast.Attribute) -> Any:
        dotted = _dotted(node)
        if dotted == "argparse.SUPPRESS":
            return "==SUPPRESS=="
        if dotted in ("argparse.BooleanOptionalAction", "BooleanOptionalAction"):
            return TypeRef("BooleanOptionalAction")
        owner = self.value(node.value)
        if isinstance(owner, EnumClass):
            for name, value in owner.members:
                if name == node.attr:
                    return EnumMember(name, value)
        if isinstance(owner, EnumMember) and node.attr in ("value", "name"):
            return owner.value if node.attr == "value" else owner.name
        raise Unknown(dotted)

    def _call(self, node: ast.Call) -> Any:
        func = _dotted(node.func)
        if func in ("list", "tuple", "sorted", "set") and len(node.args) == 1:
            return list(_iterate(self.value(node.args[0])))
        if isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
            owner = self.value(node.func.value)
            if isinstance(owner, dict):
                return list(owner)
        raise Unknown(func or "a call")

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> list[Any]:
        if (
            len(node.generators) != 1
            or node.generators[0].ifs
            or not isinstance(node.generators[0].target, ast.Name)
        ):
            raise Unknown("a comprehension")
        generator = node.generators[0]
        assert isinstance(generator.target, ast.Name)
        items = _iterate(self.value(generator.iter))
        return [self.with_bindings({generator.target.id: item}).value(node.elt) for item in items]


def _iterate(value: Any) -> Iterator[Any]:
    if isinstance(value, EnumClass):
        return (EnumMember(name, v) for name, v in value.members)
    if isinstance(value, (list, tuple, set, dict, str)):
        return iter(value)
    raise Unknown("not iterable")


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def dotted(node: ast.expr) -> str:
    """``a.b.c`` for a chain of names; ``""`` for anything else."""
    return _dotted(node)
