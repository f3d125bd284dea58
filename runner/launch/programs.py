"""programs: run-matrix's own Python programs, run as ``python3 -c PROGRAM ...`` on the node or this
machine: the call of a function of the checkout's (a verify job's check, by its dotted name, or a
function a test defines, ``PATH.py:function``: a ``verify:`` entry, a prepare step of kind ``call``,
a ``launch.before_submit`` hook), a prepare call whose result flags take (written to a file, once
checked to be one line of text), a hook's call kept up for the job (and, when its state is read or
it has ``stop:``, stopped and asked for its report once the job has ended), and the filling of a
verify job's arguments with what hooks reported. Text only; nothing here runs them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from runner.spec.runtime import hooks, reads
from schemas import calls
from schemas.calls import MAX_CALL_ARGS, Called

# what a verify job (a prepare call, a hook too) runs: ``python3 -c PROGRAM CALL ARGS [ROOT]``. CALL is
# the spec's, checked by its model (schemas/calls.py) and rules L15/L16, and nothing of the spec is
# evaluated: a dotted name is imported as a module; a test's own ``PATH.py:function`` is loaded from
# ROOT/PATH (the checkout; the root, then the file's folder, first on sys.path, as import ran it)
# under a module name of its own, so the test's ``__main__`` block does not run. The JSON writes each
# "$" as \u0024, so the shell leaves it alone; the program fills each ${NAME} in the decoded strings
# from the job's env (a value holding a quote stays one string). miles' checks fail by assert, which
# PYTHONOPTIMIZE (a spec's env: reaches this job) would strip. A check's arguments: JSON, ${NAME}
# filled from the job's env, then each converted by the parameter's annotation as pydantic reads JSON
# (a mapping into a dataclass or model, text into a Path); import checks that this gives back what
# the test passed (importer/verifiers.py).
OWN_CHECK_MODULE = "run_matrix_own_check"
_LOADED = (
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
)


def _keywords(args: str) -> str:
    """The keyword arguments of the JSON ``args`` (a Python expression), ${NAME} filled, each converted
    by the annotation of its parameter in ``hints``."""
    return (
        "{k: TypeAdapter(hints[k]).validate_json(json.dumps(v)) if k in hints else v"
        f" for k, v in fill({args}).items()}}"
    )


CALL_PROGRAM = f"{_LOADED} check(**{_keywords('json.loads(sys.argv[2])')})"
VERIFY_PROGRAM = CALL_PROGRAM
# a prepare call whose result a flag takes ($${prepared:FUNCTION}, runner/spec/runtime/prepared.py): the
# same call, then what it returned written to the file argv[4] names (run makes it in a fresh folder, a
# rendered script with mktemp) as the text the flag takes: a str or os.PathLike (os.fspath), not empty, one
# line (no NUL, no line break), no ${ (the job's shell would expand it), at most reads.MAX_BYTES bytes of
# UTF-8. Anything else exits non-zero saying what the function returned: the line its step fails with
PREPARED_PROGRAM = f"""{_LOADED} result = check(**{_keywords("json.loads(sys.argv[2])")})
text = os.fspath(result) if isinstance(result, (str, os.PathLike)) else result
said = f'run-matrix: {{name}}() returned {{type(result).__name__}}'
isinstance(text, str) or sys.exit(f'{{said}}, which is no text: a flag takes a str or os.PathLike (a path)')
size, shown = len(text.encode(errors='surrogatepass')), repr(text if len(text) <= 80 else text[:77] + '...')
why = ('it is empty' if not text else 'it holds a NUL or a line break' if re.search('[\\x00\\n\\r]', text)
    else "it holds ${{, which the job's shell would expand" if '${{' in text
    else 'it is no UTF-8 text (it holds a lone surrogate)' if re.search('[\\ud800-\\udfff]', text)
    else f'it is {{size}} bytes of UTF-8, more than {reads.MAX_BYTES}' if size > {reads.MAX_BYTES} else '')
why and sys.exit(f'{{said}} {{shown}}: {{why}}; a flag takes its result as one line of text')
with open(sys.argv[4], 'w', encoding='utf-8') as out:
    out.write(text)"""
# a check of what a test runs after its launches, in the function that launched them (verify:
# launched_by): the same call, once each function named in argv[4] (a JSON list) is, in the called
# function's module, one that does nothing; a name the module lacks stops it (AttributeError) before
# the call
REPLAY_PROGRAM = (
    f"{_LOADED} [getattr(module, n) and setattr(module, n, lambda *a, **k: None)"
    f" for n in json.loads(sys.argv[4])]; check(**{_keywords('json.loads(sys.argv[2])')})"
)
# a hook of the test's own (launch.before_submit: PATH.py:function) is called by the same program,
# which then says so on a line of its own and stays, with all the hook started (a server, a router),
# until the job has ended and run stops its process session, as the test's process stays in miles
HOOK_READY = "run-matrix: the before_submit hook returned"
HOOK_PROGRAM = (
    CALL_PROGRAM + f"; print({HOOK_READY!r}, flush=True); import threading; threading.Event().wait()"
)


# a hook whose state a verify argument reads, or that has ``stop:``, keeps what it returned and waits
# for its stdin to end (run writes a fresh token on it and closes it once the job has ended; a run that
# dies closes it too), then calls ``stop`` with its arguments (converted as a call's are), reads the
# attributes asked for (argv[4]: {"stop": {"call", "args"} or null, "read": [ATTRIBUTE, ...]}), and
# writes ONE line: HOOK_REPORTED, a space, the token, a space, and {"state": {ATTRIBUTE: JSON}} or
# {"fault": WHY}; then it exits at once (a thread the hook left running would hold an ordinary exit),
# and run stops what is left of its process session. The line starts a line of its own (a stop that
# printed without a line's end would have it begin mid-line), and only the token tells it from a line
# of the same text the hook's own code printed, before it was asked or while it stopped
HOOK_REPORTED = "run-matrix: the before_submit hook reported:"
REPORT_BYTES = MAX_CALL_ARGS  # what a report may hold: its values travel in a verify job's command line
HOOK_REPORT_PROGRAM = f"""{_LOADED} handle = check(**{_keywords("json.loads(sys.argv[2])")})
print({HOOK_READY!r}, flush=True); asked = json.loads(sys.argv[4])
token = sys.stdin.buffer.read().decode(errors='replace').strip()
def report(kind=type(handle).__name__):
    stop = asked['stop']
    if stop and not callable(getattr(handle, stop['call'], None)):
        return {{'fault': f"the hook returned {{kind}}, which has no method {{stop['call']}}"}}
    try:
        check = stop and getattr(handle, stop['call']); hints = stop and typing.get_type_hints(check)
        stop and check(**{_keywords("stop['args']")})
    except Exception as e:
        return {{'fault': f"{{stop['call']}}() raised {{type(e).__name__}}: {{str(e)[:1000]}}"}}
    state = {{}}
    for name in asked['read']:
        if not hasattr(handle, name):
            return {{'fault': f'the hook returned {{kind}}, which has no attribute {{name}}'}}
        try:
            state[name] = json.loads(json.dumps(getattr(handle, name), allow_nan=False))
        except (TypeError, ValueError) as e:
            return {{'fault': f'{{kind}}.{{name}} is no JSON value: {{str(e)[:1000]}}'}}
    return {{'state': state}}
reported = chr(10) + {HOOK_REPORTED!r} + ' ' + token + ' ' + json.dumps(report()) + chr(10)
sys.stdout.flush(); sys.stderr.flush(); os.write(1, reported.encode()); os._exit(0)"""


def asked(stop: Mapping[str, Any] | None, state: Sequence[str]) -> str:
    """The report program's argv[4]: how to stop the hook's handle, which attributes to report."""
    return call_arguments({"stop": stop, "read": list(state)})


# a verify job's arguments with each hook reference replaced by what the hook reported, as a rendered
# script fills them: ``python3 -c FILL_PROGRAM ARGS NAME REPORT [NAME REPORT ...]`` prints the
# arguments as call_arguments writes them (run fills them in Python: hooks.filled, the same walk)
FILL_PROGRAM = (
    "import json, re, sys;"
    " state = {n: json.loads(r)['state'] for n, r in zip(sys.argv[2::2], sys.argv[3::2])};"
    " fill = lambda v: [fill(x) for x in v] if isinstance(v, list)"
    " else {k: fill(x) for k, x in v.items()} if isinstance(v, dict)"
    f" else state[m[1]][m[2]] if isinstance(v, str) and (m := re.fullmatch({hooks.WHOLE.pattern!r}, v))"
    " else v;"
    " print(json.dumps(fill(json.loads(sys.argv[1])), separators=(',', ':')).replace('$', '\\\\u0024'))"
)


def call_argv(python: str, called: Called, root: str, program: str = CALL_PROGRAM) -> tuple[str, ...]:
    """``python -c PROGRAM CALL ARGS [ROOT]``: the checkout's root comes along for a test's own
    function, which is loaded from its file there (a dotted name is imported as it is)."""
    own = (root,) if calls.is_own(called.call) else ()
    return (python, "-c", program, called.call, call_arguments(called.args), *own)


def call_arguments(args: Mapping[str, Any]) -> str:
    """A call's arguments as the program reads them: JSON with every ``$`` as ``\\u0024``."""
    return json.dumps(args, separators=(",", ":")).replace("$", "\\u0024")


def filled_argv(argv: Sequence[str], args: Mapping[str, Any], reported: hooks.Reported) -> tuple[str, ...]:
    """A verify job's argv with its arguments' hook references replaced by what the hooks reported."""
    written, filled = call_arguments(args), call_arguments(hooks.filled(dict(args), reported))
    return tuple(filled if token == written else token for token in argv)
