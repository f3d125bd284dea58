"""The import sandbox: runs one miles test script with nothing executed, downloaded or started.

``python -I -B harness.py SCRIPT [MILES_ROOT]`` — a fresh interpreter that ``capture.py`` starts
in run-matrix's sandbox (``runner.sandbox``: no network, a read-only view of the script and the
checkout, its own PID namespace, resource limits); ``harness.py --each MILES_ROOT SECONDS SCRIPT...``
records many scripts of one checkout, each in a fork after one load of miles' helpers, with what
its environment holds besides the sandbox's (``RUN_MATRIX_EACH_ENVIRONMENT``: its switches, the
calls it records) set in its fork (``runner/sandbox/forks.py``, for ``together.py``). Before the
script runs:

* miles' command helpers are replaced: without ``MILES_ROOT`` the whole helper module is
  ``recorder.py`` (recording into ``trace.py``); with it, miles' own module is loaded from the
  checkout and its process-running helpers (``exec_command*``, conversions, downloads) are
  swapped for recorders with the same signatures, and ``execute_train`` runs with its commands
  recorded;
* everything else that could reach out is guarded: starting a process, sending a signal or
  opening a network connection refuses the import; writing, moving or deleting a file is
  recorded and not done (a whole file the test's own code writes goes to a private copy whose
  text becomes a ``write-file`` step, any other write to ``/dev/null``); tempfile's names come
  from a fixed seed, so a temporary file the launch names is named alike in every run;
* the checkout's checks of a run's output (``verifiers:`` of the launch conventions, such as
  ``compare_metrics``) record their arguments and check nothing: they become the spec's ``verify:``;
  so do, with ``MILES_ROOT``, the script's own functions a launching function calls after its launch
  (``script_checks.py``);
* reads of environment variables are recorded (the variant switches are found that way), and so
  are functions of the script that ``prepare()`` calls which use no helper and touch no file
  (their effect is invisible to the recorder); the guards themselves are in ``guards.py`` (with
  ``runner/sandbox/reaching_out.py``), ``file_guards.py`` and ``prepared_paths.py`` (what
  ``os.path`` and ``pathlib`` make of what a function recorded as a prepare call returns).

The guards turn an attempt into a refusal that names the script's line; the sandbox makes the
attempt harmless where they miss it. The trace goes to ``$RUN_MATRIX_OUT/trace.json``.

Standard library only: this file runs outside run-matrix.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import runpy
import sys
import sysconfig
import tempfile
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import IO, Any

HELPERS_MODULE = "miles.utils.external_utils.command_utils"
_UNLINK, _RMDIR = os.unlink, os.rmdir  # the real ones, kept before the guards replace them
EACH = "--each"  # harness.py --each MILES_ROOT SECONDS SCRIPT...: helpers loaded once, each script in a fork
BEFORE_THE_SCRIPT = "<run-matrix: loading miles' helpers>"  # the trace's script until --each's fork has one
MAX_WRITTEN = 64 * 1024  # bytes of a file the test writes that a prepare step may hold
HERE = Path(__file__).resolve().parent
SANDBOX_FOLDER = HERE.parent / "sandbox"  # whose files below run in the sandbox, loaded by path too
MISSING = SANDBOX_FOLDER / "missing.py"  # the stand-ins for absent packages (shared with knowledge/)
FORKS = SANDBOX_FOLDER / "forks.py"  # harness.py --each: a fork per script
REACHING_OUT = SANDBOX_FOLDER / "reaching_out.py"  # what no code in the sandbox may do
SANDBOX = (
    "harness.py",
    "guards.py",
    "file_guards.py",
    "trace.py",
    "recording.py",
    "recorder.py",
    "registry.py",
    "verifiers.py",
    "hooks.py",
    "script_checks.py",
    "own_calls.py",
    "returned.py",
    "prepared_paths.py",
)  # what of importer/ runs in the sandbox; and of sandbox/:
SANDBOX_FILES = (MISSING, FORKS, REACHING_OUT)
# Stand-ins for the packages a miles test imports besides the helpers (CI registration only).
STUB_PACKAGES = ("miles", "miles.utils", "miles.utils.external_utils", "tests", "tests.ci")
STUB_MODULES = ("tests.ci.ci_register", "tests.ci.metric_history")
# the checkout's folders that are miles itself (its helpers, its model presets), not the test's code
LIBRARY = ("miles", "scripts/models")
RECORDED_CALLS = "RUN_MATRIX_RECORDED_CALLS"  # [[file, function, role], ...] that own_calls.py records
# --each: [{NAME: VALUE, ...}, ...], what each script's environment holds besides the sandbox's
EACH_ENVIRONMENT = "RUN_MATRIX_EACH_ENVIRONMENT"


def main(argv: Sequence[str]) -> int:
    if argv[:1] == [EACH]:  # forks.py is loaded before any guard: it keeps the real os.fork and os.kill
        forks = _load("_run_matrix_forks", FORKS)
        root = Path(argv[1]).resolve()
        scripts = [Path(a).resolve() for a in argv[3:]]
        environments = json.loads(os.environ.pop(EACH_ENVIRONMENT, "[]")) or [{} for _ in scripts]
        recorder = functools.partial(_Recorder, None, root, None)
        runs = forks.each(recorder, float(argv[2]), list(zip(scripts, environments, strict=True)))
    else:
        runs = _alone(Path(argv[0]).resolve(), Path(argv[1]).resolve() if len(argv) > 1 else None)
    # the script runs from here, in both ways (a script's function sees the same frames outward)
    for recorder, script, out, failure in runs:
        recorder.write(out, failure or recorder.run(script))
    return 0


TraceFunction = Callable[..., Any]  # what sys.settrace takes: (frame, event, arg) -> the frame's own, or None
# what runs, where it writes, why miles' helpers did not load
Run = tuple["_Recorder", Path, IO[str], "dict[str, Any] | None"]


def _alone(script: Path, miles_root: Path | None) -> Iterator[Run]:
    """One script: the recorder set up, miles' helpers loaded with the script's folder on the path."""
    result = Path(os.environ["RUN_MATRIX_OUT"]) / "trace.json"  # the sandbox's one writable folder
    with result.open("w", encoding="utf-8") as out:  # opened before any guard is in place
        recorder = _Recorder(script, miles_root, script.parent)
        sys.argv = [str(script)]
        sys.path.insert(0, str(script.parent))
        yield recorder, script, out, recorder.load_helpers()


class _Recorder:
    """The recorder of one run: the trace, the stand-ins and the guards in place (``__init__``),
    miles' helpers loaded (``load_helpers``), then the script run (``run``) and the trace written.
    ``script`` None: set up for any script of ``miles_root`` (``forks.each``), then ``focus`` on one."""

    def __init__(self, script: Path | None, miles_root: Path | None, folder: Path | None) -> None:
        self.miles_root = miles_root
        self.home = os.environ.get(
            "HOME", ""
        )  # the sandbox's private one: capture.py writes it back as ${HOME}
        # under their own names: recorder.py imports them so, and recording.py imports trace.py
        trace = self.trace = _load("runner.importer.trace", "trace.py").TRACE
        self.tracing = _load("runner.importer.recording", "recording.py")
        self.recorder = _load("_run_matrix_recorder", "recorder.py")
        trace.script = str(script) if script else BEFORE_THE_SCRIPT
        trace.checkout = str(miles_root) if miles_root else ""
        trace.checkpoints = json.loads(os.environ.pop("RUN_MATRIX_CHECKPOINTS", "{}"))
        verifiers = json.loads(os.environ.pop("RUN_MATRIX_VERIFIERS", "[]"))
        trace.own_files |= {str(HERE / name) for name in SANDBOX} | set(map(str, SANDBOX_FILES))
        trace.own_code = _own_code(folder, miles_root)
        trace.library = tuple(f"{miles_root / part}{os.sep}" for part in LIBRARY) if miles_root else ()
        self.registry = _load("_run_matrix_registry", "registry.py")
        missing = _load("_run_matrix_missing", MISSING)
        self.missing = missing.Missing(
            trace.own_code, lambda name: None, functools.partial(_asked, trace), trace.refuse
        )
        sys.meta_path.append(self.missing)
        guards = _load("_run_matrix_guards", "guards.py")
        file_guards = _load("_run_matrix_file_guards", "file_guards.py")
        guards.record_environment_reads(trace)
        if script is not None:
            trace.captures = tempfile.mkdtemp(prefix="run-matrix-writes-")  # before the guards: a real folder
        trace.stdlib = tuple({sysconfig.get_paths()[key] + os.sep for key in ("stdlib", "platstdlib")})
        _same_temporary_names()
        guards.install(trace, file_guards, _load("_run_matrix_reaching_out", REACHING_OUT))
        returned = _load("_run_matrix_returned", "returned.py")
        self.run_id = str(returned.RUN_ID_STAND_IN)  # what the checkout's create_run_id() returns
        _load("_run_matrix_prepared_paths", "prepared_paths.py").install(trace, returned.PREPARED_FORM)
        checks = _load("_run_matrix_verifiers", "verifiers.py")
        own = _load("_run_matrix_script_checks", "script_checks.py")

        def record_checks() -> None:
            checks.install(verifiers)
            own.install(trace, str(miles_root), checks.recording_of)

        self.record_checks = record_checks
        hooks = self.hooks = _load("_run_matrix_hooks", "hooks.py")
        hooks.install(trace, checks.held)
        own_calls = _load("_run_matrix_own_calls", "own_calls.py")
        self.record_calls = functools.partial(
            own_calls.install, trace, hooks=hooks, held=checks.held, returned=returned
        )
        self.record_calls(json.loads(os.environ.pop(RECORDED_CALLS, "[]")))
        self.keep_hooks = functools.partial(hooks.hooked, trace)

    def focus(self, script: Path, captures: str, environment: dict[str, str]) -> bool:
        """Set up for ``script`` (in the fork of ``forks.each`` that runs it), as ``__init__`` would have,
        with ``environment`` set besides the sandbox's; False where it cannot be: a function to record
        as a call whose module the load ran (alone, it is recorded from the start)."""
        recorded = json.loads(environment.pop(RECORDED_CALLS, "[]"))
        if recorded and not {e["file"] for e in recorded}.isdisjoint(_files_run()):
            return False
        for name, value in environment.items():  # past the recording of the test's own settings
            os._Environ.__setitem__(os.environ, name, value)
        self.record_calls(recorded)
        self.trace.script = str(script)
        self.trace.own_code = self.missing.own = _own_code(script.parent, self.miles_root)
        self.trace.captures = captures
        names = tempfile._name_sequence  # type: ignore[attr-defined]
        names._rng_pid = os.getpid()  # the seeded names go on in the fork (a new pid would seed anew)
        return True

    def load_helpers(self) -> dict[str, Any] | None:
        """miles' helpers (the checkout's, else the recorder): None, else why they cannot load."""
        try:
            if self.miles_root is None:
                sys.meta_path.insert(0, _StandIns(self.recorder, self.trace, self.registry, self.tracing))
                self.keep_hooks(self.recorder)
            else:
                _use_checkout(self.miles_root, self.recorder, self.tracing, self.run_id)
                self.registry.from_checkout(self.trace, self.tracing)
                self.keep_hooks(sys.modules[HELPERS_MODULE])
        except BaseException as error:
            reason = f"cannot load miles' helpers from {self.miles_root}: {type(error).__name__}: {error}"
            return {"reason": reason, "at": [str(self.miles_root), None], "environment": True}
        return None

    def run(self, script: Path) -> dict[str, Any] | None:
        """Run the script as ``python SCRIPT`` would; the reason it stopped early, if it did."""
        return _run(script, self.miles_root, self.tracing, self.record_checks)

    def write(self, out: IO[str], failure: dict[str, Any] | None) -> None:
        trace = self.trace
        if failure is None and trace.refusal is None:
            self.hooks.rebound(trace)
        _read_back(trace.events)
        with contextlib.suppress(OSError):
            _RMDIR(trace.captures)
        data = {
            "events": trace.events,
            "env_reads": trace.env_reads,
            "refusal": trace.refusal,
            "home": self.home,
        }
        data["downloads"] = sorted(set(trace.downloads.values()))  # capture.py looks up their configs
        data["unknown_configs"] = trace.unknown_configs  # traced.py tells them with a failure
        root = str(self.miles_root or self.recorder.ROOT)
        json.dump({**data, "failure": failure, "root": root}, out)


def _files_run() -> set[str]:
    """The file of every module loaded so far."""
    return {getattr(module, "__file__", None) or "" for module in list(sys.modules.values())}


def _own_code(folder: Path | None, miles_root: Path | None) -> tuple[str, ...]:
    """The folders of the code under test: the script's, the checkout."""
    return tuple(str(path) + os.sep for path in (folder, miles_root) if path is not None)


def _same_temporary_names() -> None:
    """tempfile's names from a fixed seed: every run of a script names its temporary files alike, so
    a launch that passes one (``--sglang-config /tmp/sglang_config_XXXX.yaml``) is the same in each."""
    names = tempfile._RandomNameSequence()  # type: ignore[attr-defined]
    names._rng, names._rng_pid = random.Random(0), os.getpid()
    tempfile._name_sequence = names  # type: ignore[attr-defined]


def _read_back(events: list[dict[str, Any]]) -> None:
    """The text of each file the test's own code wrote (None when it is not text of at most
    MAX_WRITTEN bytes); the private copies go."""
    for event in (e for e in events if e["kind"] == "write"):
        capture = event.pop("capture")
        try:
            with open(capture, "rb") as copy:
                data = copy.read(MAX_WRITTEN + 1)
            event["text"] = data.decode("utf-8") if len(data) <= MAX_WRITTEN else None
        except (OSError, UnicodeDecodeError):
            event["text"] = None
        finally:
            with contextlib.suppress(OSError):
                _UNLINK(capture)  # os.unlink itself is a guard's by now


def _load(name: str, file: str | Path) -> Any:
    """A sibling file (or one named by its whole path) as module ``name`` (registered: dataclasses and
    imports look modules up by name)."""
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run(
    script: Path, miles_root: Path | None, tracing: Any, record_checks: Callable[[], None]
) -> dict[str, Any] | None:
    """Run the script as ``python SCRIPT`` would, miles' helpers loaded; why it stopped early, if it did."""
    trace = tracing.TRACE
    outer = sys.gettrace()  # own_calls.py's, when it records functions as calls
    try:
        if miles_root is not None:
            record_checks()  # checkout code: what it attempts is refused as the test's would be
        sys.settrace(_silent_prepare_code(trace, tracing.builder_returned, outer))
        runpy.run_path(str(script), run_name="__main__")
    except tracing.Refused:
        return None  # trace.refusal says why
    except SystemExit as stop:
        if stop.code not in (None, 0):
            return {"reason": f"exits with status {stop.code!r}", "at": _last_line(stop, trace)}
    except BaseException as error:  # the script's own failure, reported with its line
        failure: dict[str, Any] = {"reason": f"raises {type(error).__name__}: {error}"}
        failure |= {"at": _last_line(error, trace), "deepest": _deepest_checkout_line(error, trace)}
        if isinstance(error, FileNotFoundError) and error.filename:
            failure["missing"] = str(error.filename)
        return failure
    finally:
        sys.settrace(outer)
    return None


def _last_line(error: BaseException, trace: Any) -> list[Any]:
    """The deepest line of the script (else of any file) in the error's traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if f.filename == trace.script] or [
        f for f in frames if "importlib" not in f.filename
    ]
    last = (own or frames)[-1] if frames else None
    return [last.filename, last.lineno] if last else [trace.script, None]


def _asked(trace: Any, name: str) -> None:
    """The test's own code asked which build it runs on (``torch.version.hip``): a read, like a variable's."""
    reader = trace.own_reader(name)
    if reader is not None:
        trace.env_reads.setdefault(name, reader)


def _deepest_checkout_line(error: BaseException, trace: Any) -> list[Any] | None:
    """The deepest line of the checkout's own code (not the script's) in the error's traceback: where
    miles itself raised, when it did."""
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if trace.checkout and f.filename.startswith(trace.checkout + os.sep) and f.filename != trace.script
    ]
    return [frames[-1].filename, frames[-1].lineno] if frames else None


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The helper module is the recorder; CI registration modules accept any call; any other
    module of miles needs the real checkout."""

    def __init__(self, recorder: ModuleType, trace: Any, registry: Any, tracing: Any) -> None:
        self.recorder = recorder
        self.trace = trace
        self.registry = registry
        self.tracing = tracing

    def find_spec(
        self, name: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == HELPERS_MODULE or name in STUB_PACKAGES or name in STUB_MODULES:
            return importlib.machinery.ModuleSpec(name, self, is_package=name in STUB_PACKAGES)
        if name.startswith(("miles.", "tests.ci.")):
            raise self.trace.refuse(
                f"imports {name}, which needs miles itself: import with --miles-root DIR (a miles checkout)"
            )
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.recorder if spec.name == HELPERS_MODULE else None

    def exec_module(self, module: ModuleType) -> None:
        if module.__name__ in STUB_MODULES:
            setattr(module, "__getattr__", _accept_anything)  # noqa: B010  (a module-level __getattr__)
            self.registry.stand_in(module, self.trace, self.tracing)
        elif module.__name__ in STUB_PACKAGES:
            module.__path__ = []


def _accept_anything(name: str) -> Callable[..., None]:
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda *args, **kwargs: None


def _use_checkout(root: Path, recorder: Any, tracing: Any, run_id: str) -> None:
    """miles' own helper module, its command-running helpers replaced by recorders."""
    sys.path.insert(0, str(root))
    real = importlib.import_module(HELPERS_MODULE)
    tracing.TRACE.own_files.add(str(Path(real.__file__ or "").resolve()))
    tracing.stand_in_for(real, recorder.HELPERS, run_id)


def _silent_prepare_code(
    trace: Any, returned: Callable[[FrameType, Any], None], outer: TraceFunction | None
) -> TraceFunction:
    """A trace function: note each function of the script that ``prepare()`` calls and that records
    nothing; tell ``returned`` of every function of the test's code that returns; and trace as
    ``outer`` does. Only the test's frames are traced (a profile function would be called on every
    call and return of every library too: half of a test that runs pytest's plugins)."""
    running: dict[int, tuple[str, int, int]] = {}
    traced: dict[str, bool] = {}  # by file: whether its frames are the test's

    def returning(frame: FrameType, event: str, arg: Any) -> TraceFunction:
        if event == "return":
            returned(frame, arg)
            if id(frame) in running:
                name, line, before = running.pop(id(frame))
                if len(trace.events) == before:
                    trace.events.append({"kind": "silent", "function": name, "at": [trace.script, line]})
        return returning

    def calls(frame: FrameType, event: str, arg: Any) -> TraceFunction | None:
        inner = outer(frame, event, arg) if outer is not None else None
        file = frame.f_code.co_filename
        own = traced.get(file)
        if own is None:
            own = traced[file] = file == trace.script or trace.is_test_code(file)
        if not own:
            return inner
        caller = frame.f_back
        if (
            file == trace.script
            and caller
            and caller.f_code.co_name == "prepare"
            and caller.f_code.co_filename == trace.script
        ):
            running[id(frame)] = (frame.f_code.co_name, frame.f_code.co_firstlineno, len(trace.events))
        return returning if inner is None else _both(returning, inner)

    return calls


def _both(one: TraceFunction, other: TraceFunction) -> TraceFunction:
    """A frame's trace function that calls ``one`` and ``other`` (each as the frame's own)."""
    inner: TraceFunction | None = other

    def both(frame: FrameType, event: str, arg: Any) -> TraceFunction:
        nonlocal inner
        one(frame, event, arg)
        if inner is not None:
            inner = inner(frame, event, arg)
        return both

    return both


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # the trace is written and closed: a thread or an atexit hook the script left behind ends here,
    # instead of holding the import until its time limit
    os._exit(status)
