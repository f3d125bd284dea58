"""``parser.add_argument(...)`` calls read from source, as argparse would build them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from runner.knowledge.flags.catalog import Flag, Kind
from runner.knowledge.flags.static import EnumMember, Scope, TypeRef, Unknown, dotted
from schemas.values import FLAG_NAME

UNKNOWN: Any = TypeRef("<unknown>")  # a keyword whose value only running the code would give
SWITCH_ACTIONS = {"store_true", "store_false", "store_const", "count", "append_const", "help", "version"}
VALUE_ACTIONS = {None, "store", "append", "extend"}
CALLS = {"add_argument", "reset_arg"}


@dataclass(frozen=True)
class RawArgument:
    """One add_argument call: option strings and keywords, as far as they can be read."""

    options: tuple[str, ...]
    kwargs: dict[str, Any]
    where: str

    @property
    def field(self) -> str:
        """The attribute the flag sets: SGLang's ServerArgs field when the default names it, else dest."""
        field = self.kwargs.get("field")
        return field if isinstance(field, str) else self.dest

    @property
    def dest(self) -> str:
        dest = self.kwargs.get("dest")
        if isinstance(dest, str):
            return dest
        longs = [o for o in self.options if o.startswith("--")] or list(self.options)
        return longs[0].lstrip("-").replace("-", "_") if longs else ""


def calls(scope: Scope, root: ast.AST, label: str) -> Iterator[RawArgument | str]:
    """Every add_argument (and miles' reset_arg) call under ``root``; a string for each call
    whose option names cannot be read (the caller reports it: a flag we may be missing)."""
    for node in ast.walk(root):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name not in CALLS:
            continue
        positional = node.args[1:] if name == "reset_arg" else node.args
        where = f"{label}:{node.lineno}"
        try:
            options = tuple(_options(scope, positional))
        except Unknown as exc:
            if any(k.arg is None for k in node.keywords):
                continue  # a helper forwarding (name, **kwargs): miles' reset_arg itself
            yield f"{where}: option names not readable ({exc})"
            continue
        if not options or not all(o.startswith("-") for o in options):
            continue  # a positional argument: not a flag
        kwargs = {k.arg: _keyword(scope, k.value, k.arg) for k in node.keywords if k.arg}
        for keyword in node.keywords:  # default=ServerArgs.ep_size names the field the flag sets
            if keyword.arg == "default" and isinstance(keyword.value, ast.Attribute):
                kwargs["field"] = keyword.value.attr
        yield RawArgument(options, kwargs, where)


def misnamed(raw: RawArgument) -> str | None:
    """Why an argument of a source tree is skipped: an option string that is no flag name (a spec's
    grammar, after the leading dashes) would reach a spec's keys and a launch's argv. None: all are."""
    for option in raw.options:
        if not FLAG_NAME.fullmatch(option.lstrip("-")):
            grammar = "letters, digits, - and _ after the leading --: skipped"
            return f"{raw.where}: {option!r} is not a flag name ({grammar})"
    return None


def _options(scope: Scope, nodes: list[ast.expr]) -> Iterator[str]:
    for node in nodes:
        value = scope.value(node.value) if isinstance(node, ast.Starred) else scope.value(node)
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                raise Unknown(repr(item))
            yield item


def _keyword(scope: Scope, node: ast.expr, name: str) -> Any:
    try:
        return scope.value(node)
    except Unknown:
        # an action class is known by its name (SGLang's DeprecatedAliasStoreAction, ...)
        return TypeRef(dotted(node).rsplit(".", 1)[-1]) if name == "action" and dotted(node) else UNKNOWN


def prefixed(raw: RawArgument, flag_prefix: str, dest_prefix: str) -> RawArgument:
    """As miles registers SGLang's arguments: every option ``--{prefix}-{stem}``, dest and field prefixed."""
    options = tuple(f"--{flag_prefix}-{o.lstrip('-')}" for o in raw.options)
    kwargs = {**raw.kwargs, "field": dest_prefix + raw.field}
    if isinstance(raw.kwargs.get("new_flag"), str):
        kwargs["new_flag"] = f"--{flag_prefix}-{raw.kwargs['new_flag'].lstrip('-')}"
    if isinstance(raw.kwargs.get("dest"), str):
        kwargs["dest"] = dest_prefix + raw.kwargs["dest"]
    return replace(raw, options=options, kwargs=kwargs)


def to_flags(raw: RawArgument, program: str) -> list[Flag]:
    """The catalog entries of one argument: its flag, and ``--no-X`` for a BooleanOptionalAction."""
    names = [o.lstrip("-") for o in raw.options]
    name = _canonical(names, raw.field, raw.dest)
    aliases = tuple(n for n in names if n != name)
    action = raw.kwargs.get("action")
    default = _plain(raw.kwargs.get("default"))
    if action == TypeRef("BooleanOptionalAction"):
        switch = Flag(name, program, "switch", "bool", None, None, aliases, default, raw.where)
        negated = [f"no-{n}" for n in names]
        return [
            switch,
            Flag(negated[0], program, "switch", "bool", None, None, tuple(negated[1:]), None, raw.where),
        ]
    kind = _kind(action)
    nargs = raw.kwargs.get("nargs")
    if nargs is UNKNOWN or not isinstance(nargs, (str, int, type(None))):
        kind = "other"
        nargs = None
    return [
        Flag(
            name,
            program,
            kind,
            "bool" if kind == "switch" else _type(raw.kwargs.get("type")),
            _choices(raw.kwargs.get("choices")),
            nargs,
            aliases,
            default,
            raw.where,
            _same_as(raw),
        )
    ]


def _kind(action: Any) -> Kind:
    """Whether the flag takes a value; SGLang's deprecation actions by their names."""
    if isinstance(action, TypeRef):
        if "StoreTrue" in action.name or "StoreConst" in action.name or action.name == "DeprecatedAction":
            return "switch"
        return "value" if action.name == "DeprecatedAliasStoreAction" else "other"
    return "switch" if action in SWITCH_ACTIONS else "value" if action in VALUE_ACTIONS else "other"


def _same_as(raw: RawArgument) -> str | None:
    new_flag = raw.kwargs.get("new_flag")
    return new_flag.lstrip("-") if isinstance(new_flag, str) else None


def _canonical(names: list[str], field: str, dest: str) -> str:
    """The spelling of the attribute the flag sets (SGLang's --ep-size for ServerArgs.ep_size, not
    its --expert-parallel-size alias), else the one argparse's dest comes from, else the first."""
    for wanted in (field, dest):
        for name in names:
            if name.replace("-", "_") == wanted:
                return name
    return names[0]


def _type(value: Any) -> str:
    if value is None:
        return "str"
    if isinstance(value, TypeRef) and value.name in ("int", "float", "str"):
        return value.name
    return "unknown"


def _choices(value: Any) -> tuple[Any, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item.name if isinstance(item, EnumMember) else item for item in value)


def _plain(value: Any) -> Any:
    """A default as JSON can hold it; anything else is left out (None)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, list) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return value
    if isinstance(value, EnumMember):
        return value.name
    return None
