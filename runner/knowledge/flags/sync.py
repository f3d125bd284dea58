"""Build a catalog from source trees, statically: a miles checkout, the Megatron-LM it installs,
the SGLang it installs and sglang-router. Nothing of any tree is imported or run.

``run-matrix flags sync`` calls :func:`build`; ``--miles-root`` calls :func:`miles_flags` alone
and takes Megatron's and SGLang's flags from the shipped catalog.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner.knowledge.checkout import CheckoutError, Tree
from runner.knowledge.flags import dataclass_args
from runner.knowledge.flags.argparse_calls import RawArgument, calls, misnamed, prefixed, to_flags
from runner.knowledge.flags.catalog import Catalog, Flag, merged
from runner.knowledge.flags.static import Module, Scope, Unknown, dotted

MILES_FILES = (  # where miles' parse_args adds flags (miles/utils/arguments.py and what it calls)
    "miles/utils/arguments.py",
    "miles/backends/sglang_utils/arguments.py",
    "miles/dashboard/args.py",
    "miles/backends/megatron_utils/arguments.py",
)
FSDP_ARGUMENTS = (  # the FSDP backend's own parser (train-backend fsdp), instead of Megatron's
    "miles/backends/fsdp_utils/arguments.py",
    "miles/backends/experimental/fsdp_utils/arguments.py",
)
MEGATRON_ARGUMENTS = "megatron/training/arguments.py"
SGLANG_SERVER_ARGS = ("python/sglang/srt/server_args.py", "sglang/srt/server_args.py")  # a checkout, a wheel
ROUTER_ARGS = (
    "sglang_router/router_args.py",
    "py_src/sglang_router/router_args.py",
    "sglang_router/launch_router.py",
)
MAX_FILES = 5000  # a source tree larger than Megatron's is not one


@dataclass(frozen=True)
class Report:
    """What a build could not read: each a flag the catalog may lack or know less about."""

    unreadable: list[str] = field(default_factory=list)
    misnamed: list[str] = field(default_factory=list)  # arguments skipped: an option is no flag name


@dataclass(frozen=True)
class Prefix:
    flag: str  # sglang, eval-sglang
    dest: str  # sglang_, eval_sglang_
    skipped: frozenset[str]
    inherit: bool  # inherit=True: every switch is a BooleanOptionalAction (--no-... too)


def build(
    miles_root: Path, megatron_root: Path, sglang_root: Path, router_root: Path | None
) -> tuple[Catalog, Report]:
    report = Report()
    megatron = list(megatron_flags(megatron_root, report))
    own = list(miles_flags(miles_root, report))
    server = list(sglang_flags(sglang_root, miles_root, report))
    router = list(router_flags(router_root, report)) if router_root else []
    flags = combined(megatron, own, [*server, *router])
    sources = {
        "miles": describe(miles_root, "radixark/miles"),
        "megatron": describe(megatron_root, "Megatron-LM"),
        "sglang": describe(sglang_root, "sglang"),
        "router": describe(router_root, "sglang-router") if router_root else "not read",
    }
    commit, date = _commit(miles_root)
    return Catalog(commit, date, sources, flags), report


def combined(megatron: list[Flag], own: list[Flag], rest: list[Flag]) -> tuple[Flag, ...]:
    """The catalog's flags, each program's as it defines them. A name two programs define (miles'
    ``reset_arg`` adds ``--lr`` where Megatron has none: under the FSDP backend) is kept twice;
    ``Catalog.index`` picks the one the backend's parser ends up with."""
    return (*megatron, *own, *merged(rest, []))


def miles_flags(miles_root: Path, report: Report) -> Iterator[Flag]:
    """miles' own flags, from the checkout's argument modules (its SGLang prefixing aside)."""
    tree = Tree.at(miles_root)
    for relative in MILES_FILES:
        path = miles_root / relative
        if not tree.is_file(relative):
            continue
        module = Module.parse(path, miles_root)
        yield from _flags_of(calls(Scope([module]), module.tree, module.label), "miles", report)
    yield from fsdp_flags(miles_root, report)


def fsdp_flags(miles_root: Path, report: Report) -> Iterator[Flag]:
    """The flags of miles' FSDP backend parser (``--train-backend fsdp``): its FSDPArgs fields."""
    tree = Tree.at(miles_root)
    for relative in FSDP_ARGUMENTS:
        path = miles_root / relative
        if tree.is_file(relative):
            module = Module.parse(path, miles_root)
            found = [*dataclass_args.fsdp_fields(Scope([module]), "FSDPArgs")]
            found += [
                r for r in calls(Scope([module]), module.tree, module.label) if isinstance(r, RawArgument)
            ]
            yield from _named(found, "fsdp", report)
            return


def megatron_flags(root: Path, report: Report) -> Iterator[Flag]:
    arguments = Module.parse(root / MEGATRON_ARGUMENTS, root)
    scope = Scope([arguments, *_modules(root / "megatron")])
    yield from _flags_of(calls(scope, arguments.tree, MEGATRON_ARGUMENTS), "megatron", report)
    for function in (n for n in ast.walk(arguments.tree) if isinstance(n, ast.FunctionDef)):
        local = scope.with_bindings(_local_constants(scope, function))
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and dotted(node.func).endswith("ArgumentGroupFactory"):
                found = dataclass_args.megatron_factory(local, node, MEGATRON_ARGUMENTS)
                yield from _flags_of(found, "megatron", report)


def sglang_flags(root: Path, miles_root: Path, report: Report) -> Iterator[Flag]:
    """ServerArgs' flags as miles registers them: under each of its prefixes, minus what it skips."""
    tree = Tree.at(root)
    path = root / next((p for p in SGLANG_SERVER_ARGS if tree.is_file(p)), SGLANG_SERVER_ARGS[0])
    module = Module.parse(path, root)
    scope = Scope([module])
    raw: list[RawArgument | str] = list(dataclass_args.sglang_fields(scope, "ServerArgs"))
    function = module.function("ServerArgs.add_cli_args")
    if function is None:
        report.unreadable.append(f"{path}: no ServerArgs.add_cli_args")
    else:
        raw += list(calls(scope, function, module.label))
    for prefix in miles_prefixes(miles_root, report):
        for each in raw:
            if isinstance(each, str):
                report.unreadable.append(each)
            elif each.dest not in prefix.skipped:
                yield from _named([_prefixed(each, prefix)], "sglang", report)


def _prefixed(raw: RawArgument, prefix: Prefix) -> RawArgument:
    argument = prefixed(raw, prefix.flag, prefix.dest)
    if prefix.inherit and argument.kwargs.get("action") in ("store_true", "store_false"):
        from runner.knowledge.flags.static import TypeRef

        argument = RawArgument(
            argument.options, {**argument.kwargs, "action": TypeRef("BooleanOptionalAction")}, argument.where
        )
    return argument


def miles_prefixes(miles_root: Path, report: Report) -> list[Prefix]:
    """The prefixes miles registers ServerArgs under, read from its sglang_utils/arguments.py."""
    path = miles_root / "miles/backends/sglang_utils/arguments.py"
    module = Module.parse(path)
    scope = Scope([module])
    prefixes = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and dotted(node.func) == "_add_prefixed_server_args":
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            try:
                prefixes.append(
                    Prefix(
                        scope.value(keywords["flag_prefix"]),
                        scope.value(keywords["dest_prefix"]),
                        frozenset(scope.value(keywords["skipped_args"])),
                        bool(scope.value(keywords.get("inherit", ast.Constant(False)))),
                    )
                )
            except (Unknown, KeyError) as exc:
                report.unreadable.append(f"{path.name}:{node.lineno}: a prefix not readable ({exc})")
    if prefixes:
        return prefixes
    function = module.function("add_sglang_arguments")  # before the prefixes were a parameter
    skipped = _local_constants(scope, function).get("skipped_args", []) if function else []
    return [Prefix("sglang", "sglang_", frozenset(skipped if isinstance(skipped, list) else []), False)]


def router_flags(root: Path, report: Report) -> Iterator[Flag]:
    """sglang-router's RouterArgs, as miles adds them: ``use_router_prefix=True`` (``--router-*``)."""
    tree = Tree.at(root)
    for relative in ROUTER_ARGS:
        path = root / relative
        if tree.is_file(relative):
            module = Module.parse(path, root)
            function = module.function("RouterArgs.add_cli_args")
            if function is not None:
                scope = Scope([module], {"prefix": "router-", "use_router_prefix": True})
                yield from _flags_of(calls(scope, function, module.label), "router", report)
                return
    report.unreadable.append(f"{root}: no RouterArgs.add_cli_args")


def _flags_of(found: Iterator[RawArgument | str], program: str, report: Report) -> Iterator[Flag]:
    for each in found:
        if isinstance(each, str):
            report.unreadable.append(each)
        else:
            yield from _named([each], program, report)


def _named(found: list[RawArgument], program: str, report: Report) -> Iterator[Flag]:
    """The flags of arguments whose options are flag names; each other is skipped and said."""
    for raw in found:
        why = misnamed(raw)
        if why is None:
            yield from to_flags(raw, program)
        else:
            report.misnamed.append(why)


def _local_constants(scope: Scope, function: ast.FunctionDef) -> dict[str, object]:
    bindings: dict[str, object] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                bindings[node.targets[0].id] = scope.with_bindings(bindings).value(node.value)
            except Unknown:
                continue
    return bindings


def _modules(root: Path) -> list[Module]:
    """The modules of one package folder of a source tree (``root.parent``), read through the door."""
    tree = Tree.at(root.parent)
    modules = []
    for relative in tree.files(root.name, "*.py", recursive=True, limit=MAX_FILES * 4)[:MAX_FILES]:
        try:
            modules.append(Module.parse(root.parent / relative, root.parent))
        except (SyntaxError, UnicodeDecodeError, ValueError, CheckoutError):
            continue
    return modules


def describe(root: Path, what: str) -> str:
    commit, date = _commit(root)
    version = _version(root)
    parts = [what, version, f"commit {commit} ({date})" if date != "0000-00-00" else f"at {root}"]
    return " ".join(p for p in parts if p)


def _commit(root: Path) -> tuple[str, str]:
    from runner.knowledge.checkout import identity

    found = identity(root)
    if found is None:
        return root.name[:12], "0000-00-00"  # not a git checkout: named by its folder, older than any
    return found[0][:8], found[1]


def _version(root: Path) -> str:
    tree = Tree.at(root)
    for name in ("VERSION", "version.txt", "python/sglang/version.py", "sglang_router/version.py"):
        if tree.is_file(name):
            text = tree.read_text(name, limit=64 * 1024).strip()
            return text.rsplit("=", 1)[-1].strip().strip("'\"")[:40]
    return ""
