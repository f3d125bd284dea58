"""The hooks a test passes ``execute_train`` (``before_ray_job_submit``), in the import sandbox: the
``launch.before_submit`` entry each becomes, or why a spec cannot hold it.

* miles' own hook (``U.start_mooncake_master``, kept as the helper module had it before the script
  ran: a swapped, rewritten or look-alike one is the test's own code) is the service a spec names;
* a top-level function of a test of the checkout, taking no arguments, is named by its path there
  (``tests/test_external_rollout.py:_launch_background``);
* a function defined inside another whose body only calls a top-level function of the test with
  values it captured or constants (miles' OPD test: ``def launch_teacher(): nonlocal process;
  process = _launch_teacher_server(teacher_gpu)``) is that function with those values as JSON
  arguments (``{call: PATH.py:_launch_teacher_server, args: {teacher_gpu: "4"}}``), read from its
  source and its closure, never run.

Nothing of a hook runs here. Loaded by path by ``harness.py``; standard library only (its arguments
become JSON as a ``verify:`` entry's do, by ``verifiers.held``, which ``install`` is given).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any

Held = Callable[[Any, str, Any], tuple[Any, str | None]]  # verifiers.held: a value as a JSON argument
# miles' own before_ray_job_submit hooks (functions of its helper module) -> the service a spec names
MILES_HOOKS = {"start_mooncake_master": "mooncake-master"}
SPEC_FORMS = (
    "a spec's launch.before_submit names miles' own start_mooncake_master or a top-level function of a"
    " test of the checkout (PATH.py:function), with JSON arguments"
)


def install(trace: Any, held: Held) -> None:
    """Each hook execute_train is given becomes its entry through ``trace.hook_entry``; ``held`` is
    how a value becomes a JSON argument, as a ``verify:`` entry's does (verifiers.py)."""
    trace.hook_entry = lambda hook: entry(trace, hook, held)


def hooked(trace: Any, helpers: object) -> None:
    """Keep miles' hooks as the helper module has them before the script runs: a script that swaps
    or rewrites one (its code, its defaults) passes code of its own."""
    for name in MILES_HOOKS:
        function = getattr(helpers, name, None)
        if callable(function):
            trace.hooks[name] = _identity(function)


def entry(trace: Any, hook: object, held: Held) -> str | dict[str, Any]:
    """The ``launch.before_submit`` entry of ``hook``; refused (at the script's line) when there is none."""
    for function, service in MILES_HOOKS.items():
        if function in trace.hooks and _same(hook, trace.hooks[function]):
            return service
    name = getattr(hook, "__qualname__", type(hook).__name__)
    found = _own(trace, hook)
    if isinstance(found, str) and isinstance(hook, types.FunctionType) and hook.__code__.co_freevars:
        found = _forwarding(trace, hook, held)
    if isinstance(found, str):
        raise trace.refuse(
            f"passes execute_train a before_ray_job_submit hook of its own ({name}), {found}: {SPEC_FORMS}"
        )
    call, args = found
    return {"call": call, "args": args} if args else call


def _own(trace: Any, hook: object) -> tuple[str, dict[str, Any]] | str:
    """A top-level function of the test's that takes no arguments, by its path: (call, {}); else why not."""
    why = unnamed(trace, hook)
    if why is not None:
        return why
    required = [
        p.name
        for p in inspect.signature(hook).parameters.values()  # type: ignore[arg-type]
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return f"which takes {', '.join(required)}" if required else (path(trace, hook), {})


def unnamed(trace: Any, function: object) -> str | None:
    """Why a spec cannot name ``function`` as PATH.py:function (a clause that starts with "which");
    None for a top-level function of the checkout's tests or launchers."""
    if not isinstance(function, types.FunctionType) or function.__qualname__ != function.__name__:
        return "which is no top-level function (a function defined inside another is reached by no name)"
    if not function.__name__.isidentifier():
        return f"which is a {function.__name__.strip('<>')}, reached by no name"
    if not trace.checkout:
        return "which a spec names by its path in the checkout: import with --miles-root"
    file = function.__code__.co_filename
    if not file.startswith(trace.checkout + os.sep) or not trace.is_test_code(file):
        return "which is no function of the checkout's tests or launchers"
    if getattr(sys.modules.get(function.__module__ or ""), function.__name__, None) is not function:
        return "which its module does not hold under its own name"
    return None


def path(trace: Any, function: Any) -> str:
    """PATH.py:function of a function ``unnamed`` found a spec can name; kept in ``trace.named``, since
    its module must still hold it under that name once the script has run (``rebound``)."""
    relative = os.path.relpath(function.__code__.co_filename, trace.checkout)
    call = f"{relative}:{function.__name__}".replace(os.sep, "/")
    trace.named.append((call, function))
    return call


def rebound(trace: Any) -> None:
    """The refusal, at the first event that names it, of a function a spec names whose module holds
    something else under its name once the script has run (a ``def`` of the name again, or the name
    bound to another value, after the call): the spec's PATH.py:function loads the module without its
    ``__main__`` block and calls what the module holds last, not what the test called."""
    for call, function in trace.named:
        if function.__globals__.get(function.__name__) is function:
            continue
        quoted = json.dumps(call)  # the whole string: x.py:verify is not x.py:verify_all
        named = (e for e in trace.events if quoted in json.dumps(e, default=str))
        event = next(named, None)
        if event is not None:
            trace.refusal = {
                "reason": f"calls {function.__name__}() as {call}, and its module binds {function.__name__}"
                " to something else later: a spec's PATH.py:function calls what the module holds last (a"
                " function defined once, at the top level)",
                "at": event["at"],
            }
            return


def _forwarding(trace: Any, hook: types.FunctionType, held: Held) -> tuple[str, dict[str, Any]] | str:
    """A closure whose one statement calls a top-level function of the test with captured values or
    constants: (that function's call, its arguments by name); else why not."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(hook)))
    except (OSError, TypeError, SyntaxError):
        return "whose source cannot be read"
    definition = tree.body[0] if tree.body else None
    body = [s for s in getattr(definition, "body", []) if not isinstance(s, (ast.Nonlocal, ast.Global))]
    statement = body[0] if len(body) == 1 else None
    call = getattr(statement, "value", None) if isinstance(statement, (ast.Expr, ast.Assign)) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return "which does more than call one function of the test with values it holds"
    called = call.func.id
    if called in (*hook.__code__.co_freevars, *hook.__code__.co_varnames):
        return f"which calls {called}(), a name of its own (not its module's top-level function)"
    target = hook.__globals__.get(called)
    if target is None:
        return f"which calls {called}(), a name its module does not define"
    why = unnamed(trace, target)
    if why is not None:
        return f"which calls {called}(), {why.removeprefix('which ')}"
    if any(k.arg is None for k in call.keywords):
        return f"which calls {called}() with **: name each argument"
    cells = (cell.cell_contents for cell in hook.__closure__ or ())
    captured = dict(zip(hook.__code__.co_freevars, cells, strict=True))
    try:
        given = [_value(node, captured) for node in call.args]
        named = {k.arg: _value(k.value, captured) for k in call.keywords if k.arg is not None}
        bound = inspect.signature(target).bind(*given, **named)
    except (ValueError, TypeError) as error:
        return f"which calls {called}() with what a spec cannot hold ({error})"
    found = arguments(called, target, bound, held)
    return found if isinstance(found, str) else (path(trace, target), found)


def arguments(
    called: str,
    target: Any,
    bound: inspect.BoundArguments,
    held: Held,
) -> dict[str, Any] | str:
    """The call's arguments by keyword, as the hook program passes them, each as JSON the function
    gets back as the value the test gave; else why not."""
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.POSITIONAL_ONLY or kind is inspect.Parameter.VAR_POSITIONAL:
            return f"which calls {called}() with {name} by position, which a spec passes by name"
        arguments.update(value if kind is inspect.Parameter.VAR_KEYWORD else {name: value})
    found = {}
    for name, value in arguments.items():
        json_value, why = held(target, name, value)
        if why is not None:
            return f"which calls {called}() with {why}"
        found[name] = json_value
    return found


def _value(node: ast.expr, held: dict[str, Any]) -> Any:
    """A constant, or a value the closure holds; ValueError for anything else (nothing is evaluated)."""
    if isinstance(node, ast.Name) and node.id in held:
        return held[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    raise ValueError(f"{ast.unparse(node)} is neither a constant nor a value the hook holds")


def _identity(function: Any) -> tuple[Any, ...]:
    """The function object itself (kept, so no later object can take its place), its code and defaults."""
    defaults = (getattr(function, "__defaults__", None), getattr(function, "__kwdefaults__", None))
    return (function, getattr(function, "__code__", None), repr(defaults))


def _same(hook: object, kept: tuple[Any, ...]) -> bool:
    """``is``, never ``==``: a hook of the script's own may answer ``==`` as it likes."""
    function, code, defaults = kept
    return hook is function and getattr(hook, "__code__", None) is code and _identity(hook)[2] == defaults
