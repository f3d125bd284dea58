"""Flags generated from dataclass fields, read from source as the generators would build them.

* Megatron's ``ArgumentGroupFactory(Config, exclude=[...])``: ``--field-name``; a bool is
  ``store_true`` when its default is False, else ``store_false`` spelled ``--no-X``/``--disable-X``;
  ``Literal`` and enums give choices, ``list[T]`` gives ``nargs='+'``; a field's
  ``metadata={"argparse_meta": {...}}`` overrides all of it.
* SGLang's ``A[T, "help"]`` / ``A[T, Arg(...)]`` fields of ``ServerArgs`` (0.5.11 and later):
  ``--field-name`` plus ``Arg.aliases``; a bool is ``store_true``; ``no_cli`` fields are not flags.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from runner.knowledge.flags.argparse_calls import UNKNOWN, RawArgument
from runner.knowledge.flags.static import EnumClass, Scope, TypeRef, Unknown, dotted

MAX_BASES = 20


def fields(scope: Scope, class_name: str, depth: int = 0) -> Iterator[tuple[ast.AnnAssign, str]]:
    """A dataclass's fields in dataclass order (bases first); a redefined field keeps its place."""
    found = scope.class_def(class_name)
    if not found or depth > MAX_BASES:
        return
    node, module = found
    seen: dict[str, tuple[ast.AnnAssign, str]] = {}
    for base in node.bases:
        for item, label in fields(scope, dotted(base).rsplit(".", 1)[-1], depth + 1):
            seen[item.target.id] = (item, label)  # type: ignore[union-attr]
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            annotation = statement.annotation
            head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
            if dotted(head).rsplit(".", 1)[-1] in ("ClassVar", "InitVar"):
                continue  # not a field
            seen[statement.target.id] = (statement, f"{module.label}:{statement.lineno}")
    yield from seen.values()


# ---- Megatron ---------------------------------------------------------------------------------


def megatron_factory(scope: Scope, call: ast.Call, label: str) -> Iterator[RawArgument | str]:
    """The arguments one ``ArgumentGroupFactory(Config, exclude=...)`` call adds."""
    if not call.args:
        return
    class_name = dotted(call.args[0]).rsplit(".", 1)[-1]
    exclude: set[str] = set()
    for keyword in call.keywords:
        if keyword.arg == "exclude":
            try:
                exclude = set(scope.value(keyword.value))
            except Unknown as exc:
                yield f"{label}:{call.lineno}: exclude list of {class_name} not readable ({exc})"
    if scope.class_def(class_name) is None:
        yield f"{label}:{call.lineno}: dataclass {class_name} not found in the source tree"
        return
    for item, where in fields(scope, class_name):
        name = item.target.id  # type: ignore[union-attr]
        options = _field_options(item)
        init = options.get("init")
        if name in exclude or (isinstance(init, ast.Constant) and init.value is False):
            continue
        yield _megatron_argument(scope, item, name, options, where)


def _megatron_argument(
    scope: Scope, item: ast.AnnAssign, name: str, options: dict[str, ast.expr], where: str
) -> RawArgument:
    default = _default(scope, item, options)
    kwargs: dict[str, Any] = {"dest": name, "default": default}
    names = ["--" + name.replace("_", "-")]
    try:
        kwargs.update(_megatron_type(scope, item.annotation))
        if kwargs.get("type") == TypeRef("bool"):
            del kwargs["type"]
            kwargs["action"] = "store_true" if default is False else "store_false"
            if kwargs["action"] == "store_false":
                names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
    except Unknown:
        kwargs["type"] = UNKNOWN
    meta = _argparse_meta(scope, options)
    if "arg_names" in meta and isinstance(meta["arg_names"], list):
        names = meta.pop("arg_names")
    kwargs.update(meta)
    return RawArgument(tuple(names), kwargs, where)


def _megatron_type(scope: Scope, annotation: ast.expr) -> dict[str, Any]:
    annotation = _unquote(annotation)
    inner, _ = _optional(annotation)
    if inner is not annotation:
        return _megatron_type(scope, inner)
    if isinstance(annotation, ast.Subscript):
        head = dotted(annotation.value).rsplit(".", 1)[-1]
        args = _subscript_args(annotation)
        if head in ("list", "List") and len(args) == 1:
            return {**_megatron_type(scope, args[0]), "nargs": "+"}
        if head == "Literal":
            values = [scope.value(a) for a in args]
            return {"type": TypeRef(type(values[0]).__name__), "choices": values}
        raise Unknown(head)
    name = dotted(annotation)
    if name in ("int", "float", "str", "bool"):
        return {"type": TypeRef(name)}
    enum = scope.enum(name.rsplit(".", 1)[-1])
    if enum:
        return {"type": TypeRef("str"), "choices": [member for member, _ in enum.members]}
    raise Unknown(name or "annotation")


def _argparse_meta(scope: Scope, options: dict[str, ast.expr]) -> dict[str, Any]:
    metadata = options.get("metadata")
    if not isinstance(metadata, ast.Dict):
        return {}
    for key, value in zip(metadata.keys, metadata.values, strict=True):
        if isinstance(key, ast.Constant) and key.value == "argparse_meta" and isinstance(value, ast.Dict):
            meta: dict[str, Any] = {}
            for k, v in zip(value.keys, value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    try:
                        meta[k.value] = scope.value(v)
                    except Unknown:
                        meta[k.value] = UNKNOWN
            return meta
    return {}


# ---- SGLang -----------------------------------------------------------------------------------


def sglang_fields(scope: Scope, class_name: str) -> Iterator[RawArgument]:
    """The arguments ``add_cli_args_from_dataclass(parser, ServerArgs)`` adds."""
    for item, where in fields(scope, class_name):
        annotation = _unquote(item.annotation)
        if not (isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("A", "Annotated")):
            continue
        inner, *metas = _subscript_args(annotation)
        meta = _sglang_meta(scope, metas)
        if meta is None or meta.get("no_cli") is True:
            continue
        yield _sglang_argument(scope, item, inner, meta, where)


def _sglang_meta(scope: Scope, metas: list[ast.expr]) -> dict[str, Any] | None:
    for node in metas:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {}
        if isinstance(node, ast.Call) and dotted(node.func) == "Arg":
            meta: dict[str, Any] = {}
            for keyword in node.keywords:
                if keyword.arg and keyword.arg != "help":
                    try:
                        meta[keyword.arg] = scope.value(keyword.value)
                    except Unknown:
                        meta[keyword.arg] = UNKNOWN
            return meta
    return None


def _sglang_argument(
    scope: Scope, item: ast.AnnAssign, inner: ast.expr, meta: dict[str, Any], where: str
) -> RawArgument:
    name = item.target.id  # type: ignore[union-attr]
    cli_name = (
        meta.get("cli_name") if isinstance(meta.get("cli_name"), str) else "--" + name.replace("_", "-")
    )
    aliases: list[Any] = meta["aliases"] if isinstance(meta.get("aliases"), list) else []
    kwargs: dict[str, Any] = {"dest": name, "default": _default(scope, item, _field_options(item))}
    parser = meta.get("type_parser")
    if meta.get("action") is not None:
        kwargs["action"] = meta["action"] if isinstance(meta["action"], str) else UNKNOWN
    else:
        kwargs.update(_sglang_type(scope, inner, meta, parser))
    return RawArgument((str(cli_name), *map(str, aliases)), kwargs, where)


def _sglang_type(scope: Scope, inner: ast.expr, meta: dict[str, Any], parser: Any) -> dict[str, Any]:
    inner, _ = _optional(_unquote(inner))
    head = dotted(inner.value) if isinstance(inner, ast.Subscript) else dotted(inner)
    kwargs: dict[str, Any] = {}
    if head.endswith("Literal") and isinstance(inner, ast.Subscript):
        try:
            values = [scope.value(a) for a in _subscript_args(inner)]
            kwargs["choices"] = meta.get("choices") or values
            kwargs["type"] = parser or TypeRef(_primitive(type(values[0]).__name__) if values else "str")
        except Unknown:
            kwargs["type"] = UNKNOWN
        return kwargs
    if head in ("list", "List") and parser is None and isinstance(inner, ast.Subscript):
        element = dotted(_subscript_args(inner)[0])
        kwargs.update(type=TypeRef(_primitive(element)), nargs=meta.get("nargs") or "+")
    elif head == "bool":
        return {"action": "store_true"}
    else:
        kwargs["type"] = UNKNOWN if parser is not None else TypeRef(_primitive(head))
        if meta.get("nargs"):
            kwargs["nargs"] = meta["nargs"]
    if meta.get("choices"):
        kwargs["choices"] = meta["choices"]
    return kwargs


def _primitive(name: str) -> str:
    """SGLang's _infer_type_func: int and float convert; anything else is read as text."""
    return name if name in ("int", "float") else "str"


# ---- shared -----------------------------------------------------------------------------------


def _field_options(item: ast.AnnAssign) -> dict[str, ast.expr]:
    value = item.value
    if isinstance(value, ast.Call) and dotted(value.func).rsplit(".", 1)[-1] == "field":
        return {k.arg: k.value for k in value.keywords if k.arg}
    return {}


def _default(scope: Scope, item: ast.AnnAssign, options: dict[str, ast.expr]) -> Any:
    node = item.value
    if node is None:
        return None
    if options:
        if "default" in options:
            node = options["default"]
        elif "default_factory" in options:
            factory = dotted(options["default_factory"])
            return {"list": [], "dict": {}}.get(factory)
        else:
            return None
    try:
        value = scope.value(node)
    except Unknown:
        return None
    return value.name if isinstance(value, EnumClass) else value


def _unquote(annotation: ast.expr) -> ast.expr:
    """``"Optional[int]"`` (a string annotation) as an expression."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except (
            SyntaxError,
            ValueError,
            RecursionError,
            MemoryError,
        ):  # a checkout's text, maybe built to exhaust ast
            return annotation
    return annotation


def _optional(annotation: ast.expr) -> tuple[ast.expr, bool]:
    """``Optional[X]``, ``Union[X, None]`` and ``X | None`` -> (X, True); anything else as it is."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        if _is_none(annotation.right):
            return annotation.left, True
        if _is_none(annotation.left):
            return annotation.right, True
    if isinstance(annotation, ast.Subscript):
        head = dotted(annotation.value).rsplit(".", 1)[-1]
        args = _subscript_args(annotation)
        if head == "Optional" and len(args) == 1:
            return args[0], True
        if head == "Union" and len(args) == 2 and _is_none(args[1]):
            return args[0], True
    return annotation, False


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _subscript_args(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


# ---- miles' FSDP backend ----------------------------------------------------------------------


def fsdp_fields(scope: Scope, class_name: str) -> Iterator[RawArgument]:
    """miles' ``build_fsdp_parser``: ``--field-name`` per FSDPArgs field (``T | None`` read as T);
    a bool is a BooleanOptionalAction (``--no-X`` too)."""
    for item, where in fields(scope, class_name):
        name = item.target.id  # type: ignore[union-attr]
        inner, _ = _optional(_unquote(item.annotation))
        type_name = dotted(inner)
        kwargs: dict[str, Any] = {"dest": name, "default": _default(scope, item, _field_options(item))}
        if type_name == "bool":
            kwargs["action"] = TypeRef("BooleanOptionalAction")
        else:
            kwargs["type"] = TypeRef(type_name) if type_name in ("int", "float", "str") else UNKNOWN
        yield RawArgument(("--" + name.replace("_", "-"),), kwargs, where)
