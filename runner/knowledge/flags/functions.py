"""functions: the flags a custom function's module adds to miles' parser, read statically.

miles main's parser (``add_user_provided_function_arguments`` in ``miles/utils/arguments.py``) parses
what it knows so far, then loads the function each of two flags names by its dotted path
(``--rollout-function-path``, unless ``--fully-async`` picks miles' own rollout; and
``--custom-generate-function-path``) and, where the loaded object has a callable ``add_arguments``,
calls it with the parser. It skips this when ``MILES_USE_LEGACY_ROLLOUT_V1`` is set, and a module it
cannot find adds nothing.

Here the module is looked for in the checkout (``pkg/mod.py``, else ``pkg/mod/__init__.py``), parsed
through the door, never imported, and ``add_arguments`` is followed as the loaded object would have it:
an attribute set on a function (``generate.add_arguments = _add_arguments``), a method of a class (or
of a base it names), a name imported from another module of the checkout, and, inside the adding
function, a call of another function's ``add_arguments`` or of a function of the module that is handed
the parser. What cannot be followed so is said (:attr:`Added.unread`), never guessed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

from runner.knowledge.checkout import CheckoutError, Tree
from runner.knowledge.flags.argparse_calls import calls, misnamed, to_flags
from runner.knowledge.flags.catalog import Flag
from runner.knowledge.flags.loaded import Added
from runner.knowledge.flags.static import Module, Scope, dotted
from runner.memos import Table

MAX_STEPS = 16  # functions and modules one function's add_arguments may lead through
# what a parser is handed to without adding a flag of its own reading (argparse's own methods)
PARSER_METHODS = {"add_argument_group", "add_mutually_exclusive_group", "set_defaults"}

Adder = tuple[Module, "ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda", int]  # the parser's place
Follow = Callable[[Module, str], Iterator[Adder]]


class _Unread(Exception):
    """Following ``add_arguments`` stops here; the message says why."""


_READ: Table[tuple[str, str, str], tuple[Added, tuple[tuple[str, int], ...]]] = Table(
    "runner.knowledge.flags.functions._READ",
    "stamped",
    "what a function of a checkout adds, by (root, flag, path); kept with the modification time of"
    " every file read for it, and read again when one has changed",
    256,
)


def read(tree: Tree, option: str, function: str) -> Added:
    """What ``function`` (named by ``--option``) adds to miles' parser, read from ``tree``."""
    key = (str(tree.root), option, function)
    kept = _READ.get(key)
    if kept is not None and all(tree.stamp(path) == stamp for path, stamp in kept[1]):
        return kept[0]
    reader = _Reader(tree)
    try:
        reader.object_flags(function)
        added = Added(option, function, tuple(reader.flags))
    except _Unread as why:
        added = Added(option, function, tuple(reader.flags), str(why))
    stamps = tuple((path, tree.stamp(path)) for path in reader.files)
    return _READ.put(key, (added, stamps))[0]


class _Reader:
    """One function's ``add_arguments`` followed through the checkout: the flags found, the files read."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.flags: list[Flag] = []
        self.files: list[str] = []
        self._modules: dict[str, Module] = {}
        self._steps = 0

    def object_flags(self, function: str) -> None:
        module_name, _, name = function.rpartition(".")
        if not module_name:
            return  # importlib refuses an empty module name; miles goes on without it
        for adder in self._adders(self.module(module_name), name):
            self._read(adder)

    def module(self, name: str) -> Module:
        if name in self._modules:
            return self._modules[name]
        stem = PurePosixPath(*name.split("."))
        for relative in (stem.with_suffix(".py"), stem / "__init__.py"):
            if self.tree.is_file(relative):
                self.files.append(str(relative))
                try:
                    module = Module.parse(self.tree.root / relative, self.tree.root)
                except CheckoutError as exc:
                    raise _Unread(str(exc)) from None
                self._modules[name] = module
                return module
        raise _Unread(f"its module {name} is not in the checkout, so it was not read")

    def _step(self, what: str) -> None:
        self._steps += 1
        if self._steps > MAX_STEPS:
            raise _Unread(f"{what} leads through more than {MAX_STEPS} functions and modules")

    def _adders(self, module: Module, name: str) -> Iterator[Adder]:
        """The functions that add the flags of ``module``'s object ``name`` (none: it adds none)."""
        self._step(f"{module.label}: {name}")
        bound = _binding(module, name)
        if bound is None:
            raise _Unread(f"{module.label} defines no {name} at its top level")
        if isinstance(bound, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from self._attribute_adders(module, name)
        elif isinstance(bound, ast.ClassDef):
            yield from self._class_adders(module, bound)
        elif isinstance(bound, ast.ImportFrom):
            yield from self._imported(module, bound, name, self._adders)
        elif isinstance(bound, ast.Assign) and isinstance(bound.value, ast.Name):
            yield from self._adders(module, bound.value.id)
        else:
            raise _Unread(f"{module.label}:{bound.lineno}: {name} is made by code, not read")

    def _attribute_adders(self, module: Module, name: str) -> Iterator[Adder]:
        """A function's ``add_arguments``: the last ``name.add_arguments = ...`` of the module."""
        assigned = [
            node.value
            for node in module.tree.body
            if isinstance(node, ast.Assign)
            and any(dotted(target) == f"{name}.add_arguments" for target in node.targets)
        ]
        if assigned:
            yield from self._value_adders(module, assigned[-1])

    def _value_adders(self, module: Module, value: ast.expr) -> Iterator[Adder]:
        """What ``x.add_arguments = value`` makes the adder: a function, a lambda, another's adder, None."""
        if isinstance(value, ast.Constant) and value.value is None:
            return
        if isinstance(value, ast.Lambda):
            yield module, value, 0
        elif isinstance(value, ast.Name):
            yield from self._callable(module, value.id)
        elif isinstance(value, ast.Attribute) and value.attr == "add_arguments" and dotted(value.value):
            yield from self._adders(module, dotted(value.value))
        elif _getattr_of_adder(value):
            assert isinstance(value, ast.Call)
            yield from self._adders(module, dotted(value.args[0]))
        else:
            raise _Unread(f"{module.label}:{value.lineno}: an add_arguments made by code is not read")

    def _callable(self, module: Module, name: str) -> Iterator[Adder]:
        """The function ``name`` of ``module`` as the adder itself (its first parameter the parser)."""
        self._step(f"{module.label}: {name}")
        bound = _binding(module, name)
        if isinstance(bound, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield module, bound, 0
        elif isinstance(bound, ast.ImportFrom):
            yield from self._imported(module, bound, name, self._callable)
        else:
            raise _Unread(f"{module.label}: the adder {name} is no function of its own, so it was not read")

    def _class_adders(self, module: Module, cls: ast.ClassDef) -> Iterator[Adder]:
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "add_arguments":
                bound = any(dotted(d) == "classmethod" for d in item.decorator_list)
                yield module, item, 1 if bound else 0
                return
        for base in cls.bases:
            yield from self._base_adders(module, cls, base)

    def _base_adders(self, module: Module, cls: ast.ClassDef, base: ast.expr) -> Iterator[Adder]:
        name = dotted(base.value if isinstance(base, ast.Subscript) else base)
        bound = _binding(module, name.split(".")[0]) if name else None
        if name == "object" or (isinstance(bound, (ast.Import, ast.ImportFrom)) and _standard_library(bound)):
            return  # the standard library's classes add no flags to miles
        if isinstance(bound, (ast.ClassDef, ast.ImportFrom)) and "." not in name:
            yield from self._adders(module, name)
        else:
            raise _Unread(f"{module.label}:{cls.lineno}: {cls.name}'s base {name or '(code)'} is not read")

    def _imported(self, module: Module, node: ast.ImportFrom, name: str, follow: Follow) -> Iterator[Adder]:
        """Follow ``from M import x as name`` into M, a module of the checkout."""
        original = next(a.name for a in node.names if (a.asname or a.name) == name)
        source = _absolute(module, node)
        if source is None:
            raise _Unread(f"{module.label}:{node.lineno}: a relative import above the checkout is not read")
        yield from follow(self.module(source), original)

    def _read(self, adder: Adder) -> None:
        """The flags one adding function adds: its add_argument calls and the adders it calls."""
        module, function, place = adder
        self._step(f"{module.label}:{function.lineno}")
        for found in calls(Scope([module]), function, module.label):
            if isinstance(found, str):
                raise _Unread(found)
            why = misnamed(found)
            if why is not None:
                raise _Unread(why)
            self.flags += to_flags(found, "miles")
        parameters = function.args.posonlyargs + function.args.args
        if len(parameters) <= place:
            return
        parser = parameters[place].arg
        for call in _handing(function, parser):
            self._delegated(module, call, parser)

    def _delegated(self, module: Module, call: ast.Call, parser: str) -> None:
        """A call the parser is handed to: another object's add_arguments, or a function of the module."""
        callee = dotted(call.func)
        places = [i for i, arg in enumerate(call.args) if isinstance(arg, ast.Name) and arg.id == parser]
        owner, _, method = callee.rpartition(".")
        if method == "add_arguments" and owner and "." not in owner:
            adders = list(self._adders(module, owner))
        elif isinstance(call.func, ast.Name) and places:
            adders = [(m, f, places[0]) for m, f, _ in self._callable(module, callee)]
        else:
            raise _Unread(f"{module.label}:{call.lineno}: the parser is handed to {callee or 'code'}, unread")
        for adder in adders:
            self._read(adder)


def _binding(module: Module, name: str) -> ast.stmt | None:
    """The last top-level statement of ``module`` that binds ``name``."""
    found: ast.stmt | None = None
    for node in module.tree.body:
        if _binds(node, name):
            found = node
    return found


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name) == name for alias in node.names)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id == name for t in targets)
    return False


def _getattr_of_adder(value: ast.expr) -> bool:
    """``getattr(x, "add_arguments", None)``: x's adder, or none."""
    return (
        isinstance(value, ast.Call)
        and dotted(value.func) == "getattr"
        and len(value.args) >= 2
        and bool(dotted(value.args[0]))
        and isinstance(value.args[1], ast.Constant)
        and value.args[1].value == "add_arguments"
    )


def _handing(function: ast.AST, parser: str) -> Iterator[ast.Call]:
    """The calls in ``function`` that take the parser as an argument (argparse's own methods aside)."""
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        given = [*node.args, *(k.value for k in node.keywords)]
        if method not in PARSER_METHODS and any(isinstance(a, ast.Name) and a.id == parser for a in given):
            yield node


def _absolute(module: Module, node: ast.ImportFrom) -> str | None:
    """The module ``from ... import`` names, as an absolute dotted name (None: above the tree)."""
    if not node.level:
        return node.module
    package = list(PurePosixPath(module.label).parent.parts)  # a module's package, or an __init__'s own
    up = node.level - 1
    if up > len(package):
        return None
    base = package[: len(package) - up]
    return ".".join([*base, *([node.module] if node.module else [])])


def _standard_library(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return all(alias.name.split(".")[0] in sys.stdlib_module_names for alias in node.names)
    return not node.level and (node.module or "").split(".")[0] in sys.stdlib_module_names
