"""programs: what run-matrix runs to call a function of the checkout's. Pure.

One program, ``python3 -c CALL_PROGRAM CALL ARGS [ROOT]``, calls a check miles offers
(``verify:``, by its dotted name) or a function a test of the checkout defines (``PATH.py:function``:
a ``verify:`` entry, a ``launch.before_submit`` hook, a prepare step of kind ``call``), given the
checkout's root to load it from; a hook's program then stays, with what the hook started.
"""

from __future__ import annotations

import json

from schemas import calls
from schemas.calls import Called

# what a verify job (a hook, a prepare call too) runs: ``python3 -c PROGRAM CALL ARGS [ROOT]``.
# CALL is the spec's, checked by its model (schemas/calls.py) and rules L15/L16, and nothing of the
# spec is evaluated: a dotted name is imported as a module; a test's own ``PATH.py:function`` is
# loaded from ROOT/PATH (the checkout; the root, then the file's folder, first on sys.path, as import
# ran it) under a module name of its own, so the test's ``__main__`` block does not run. The JSON
# writes each "$" as \u0024, so the shell leaves it alone; the program fills each ${NAME} in the
# decoded strings from the job's env (a value holding a quote stays one string). miles' checks fail
# by assert, which PYTHONOPTIMIZE (a spec's env: reaches this job) would strip. A check's arguments:
# JSON, ${NAME} filled from the job's env, then each converted by the parameter's annotation as
# pydantic reads JSON (a mapping into a dataclass or model, text into a Path); import checks that
# this gives back what the test passed (importer/verifiers.py).
OWN_CHECK_MODULE = "run_matrix_own_check"
CALL_PROGRAM = (
    "import importlib, importlib.util, json, os, re, sys, typing; call = sys.argv[1]; own = ':' in call;"
    " target, _, name = call.rpartition(':' if own else '.');"
    " sys.flags.optimize and sys.exit('PYTHONOPTIMIZE is set: the asserts of the function called would"
    " not run');"
    " fill = lambda v: re.sub(r'\\$\\{([A-Za-z_][A-Za-z0-9_]*)\\}', lambda m: os.environ[m[1]], v)"
    " if isinstance(v, str) else [fill(x) for x in v] if isinstance(v, list)"
    " else {fill(k): fill(x) for k, x in v.items()} if isinstance(v, dict) else v;"
    " file = own and os.path.join(sys.argv[3], target);"
    " own and sys.path.__setitem__(slice(0, 0), [sys.argv[3], os.path.dirname(file)]);"
    f" spec = own and importlib.util.spec_from_file_location('{OWN_CHECK_MODULE}', file);"
    " module = importlib.util.module_from_spec(spec) if own else importlib.import_module(target);"
    " own and sys.modules.__setitem__(spec.name, module); own and spec.loader.exec_module(module);"
    " check = getattr(module, name); hints = typing.get_type_hints(check);"
    " from pydantic import TypeAdapter;"
    " check(**{k: TypeAdapter(hints[k]).validate_json(json.dumps(v)) if k in hints else v"
    " for k, v in fill(json.loads(sys.argv[2])).items()})"
)
VERIFY_PROGRAM = CALL_PROGRAM
# a hook of the test's own (launch.before_submit: PATH.py:function) is called by the same program,
# which then says so on a line of its own and stays, with all the hook started (a server, a router),
# until the job has ended and run stops its process session, as the test's process stays in miles
HOOK_READY = "run-matrix: the before_submit hook returned"
HOOK_PROGRAM = (
    CALL_PROGRAM + f"; print({HOOK_READY!r}, flush=True); import threading; threading.Event().wait()"
)


def call_argv(python: str, called: Called, root: str, program: str = CALL_PROGRAM) -> tuple[str, ...]:
    """``python -c PROGRAM CALL ARGS [ROOT]``: the checkout's root comes along for a test's own
    function, which is loaded from its file there (a dotted name is imported as it is)."""
    own = (root,) if calls.is_own(called.call) else ()
    return (python, "-c", program, called.call, call_arguments(called), *own)


def call_arguments(called: Called) -> str:
    """A call's arguments as the program reads them: JSON with every ``$`` as ``\\u0024``."""
    return json.dumps(called.args, separators=(",", ":")).replace("$", "\\u0024")
