"""conventions: the launch conventions of a checkout, as its own ``execute_train`` applies them.

The checkout's ``execute_train`` runs for one training backend in the sandbox, through
``conventions_driver.py`` (every command it would run is kept, none is run); the runtime env of
the ``ray job submit`` it would run is what that checkout adds around a test's flags. Compared
with the shipped conventions, each difference is named (a ``launch`` warning) and the checkout's
value wins: ``--miles-root`` decides. The result is cached under the content hash of
``command_utils.py`` and of run-matrix's own side of it. This is render's question, so it lives
here and not in ``importer/`` (which turns recordings into specs): ``render``, ``validate`` and
``list`` ask the door and ``knowledge/``, never the import.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from runner import sandbox
from runner.errors import RunMatrixError, clipped
from runner.knowledge import cache
from runner.knowledge.checkout import Tree
from runner.spec import documents
from schemas import LaunchConventions
from schemas.conventions import EnvDefault

COMMAND_UTILS = Path("miles/utils/external_utils/command_utils.py")
DRIVER = Path(__file__).with_name("conventions_driver.py")
MISSING = Path(sandbox.__file__).with_name("missing.py")  # the driver's stand-ins for absent packages
CACHE_VERSION = "2"
PROBE_TIMEOUT_S = 15.0  # the driver runs nothing: a probe that takes longer is stuck (or hostile)
CPU_HEADROOM_S = 2  # CPU seconds past the wall clock (the CPU limit is for many threads spinning)
RUNTIME_ENV = "--runtime-env-json="
_STAND_IN = "run-matrix-secret-{}"  # a secret's value in the sandbox: no real secret enters it


class ConventionsError(RunMatrixError):
    """The checkout's execute_train could not be observed; the message says why, in one line."""


Observation = tuple[Mapping[str, str], RunMatrixError | None]  # the env submitted, or why it cannot be seen


class Observed:
    """What each checkout's execute_train was seen to submit, for as long as one command runs: every
    cell of a render asks, and a stuck probe costs its timeout, so a failed probe is not retried (its
    error is the answer for every cell). The next command observes afresh; the disk cache, keyed by
    the content of ``command_utils.py``, spares it the sandbox run."""

    def __init__(self) -> None:
        self.found: dict[tuple[Path, str | None, tuple[str, ...], bool], Observation] = {}

    def env(
        self, miles_root: Path, model_type: str | None, secrets: tuple[str, ...], trust: bool
    ) -> Observation:
        key = (miles_root, model_type, secrets, trust)
        if key not in self.found:
            self.found[key] = _observed_env(*key)
        return self.found[key]


def checkout_conventions(
    miles_root: Path,
    shipped: LaunchConventions,
    model_type: str | None,
    trust: bool = False,
    observed: Observed | None = None,
) -> tuple[LaunchConventions, list[str]]:
    """The shipped conventions with the checkout's runtime env in place of theirs, and each
    difference in words (none: the shipped conventions hold for this checkout). ``observed``: what
    this command has seen the checkout submit already."""
    miles_root = miles_root.resolve()
    backend = "megatron" if model_type else "fsdp"
    root = str(miles_root)
    observed_by = observed if observed is not None else Observed()
    env_seen, error = observed_by.env(miles_root, model_type, tuple(shipped.secrets), trust)
    if error is not None:
        raise error
    env = dict(env_seen)
    fill = {"master_addr": "127.0.0.1", "megatron_path": shipped.megatron_path, "miles_root": root}
    kept: list[EnvDefault] = []
    differences: list[str] = []
    for default in shipped.runtime_env:
        if default.backend not in (None, backend) or default.probe or default.from_caller:
            env.pop(default.name, None)  # decided on the node or by the caller, not by execute_train
            kept.append(default)
            continue
        found = env.pop(default.name, None)
        expected = (default.value or "").format(**fill)
        if found is None:
            differences.append(f"no {default.name} (shipped: {expected})")
        elif found != expected:
            differences.append(f"{default.name}={found} (shipped: {expected})")
            kept.append(default.model_copy(update={"value": found.replace(root, "{miles_root}")}))
        else:
            kept.append(default)
    for name, value in env.items():
        differences.append(f"{name}={value} (not in the shipped conventions)")
        kept.append(EnvDefault(name=name, value=value.replace(root, "{miles_root}"), backend=backend))
    return shipped.model_copy(update={"runtime_env": _path_lists_last(kept)}), differences


def _path_lists_last(env: list[EnvDefault]) -> list[EnvDefault]:
    return [d for d in env if not d.path_list] + [d for d in env if d.path_list]


def _observed_env(
    miles_root: Path, model_type: str | None, secrets: tuple[str, ...], trust: bool
) -> Observation:
    """The runtime env the checkout's execute_train submits with, less what the caller or a node
    probe would decide; or why it cannot be observed."""
    try:
        return MappingProxyType(_probe(miles_root, model_type, secrets, trust)), None
    except RunMatrixError as error:
        return MappingProxyType({}), error


def _probe(miles_root: Path, model_type: str | None, secrets: tuple[str, ...], trust: bool) -> dict[str, str]:
    """The env of the probe's submission, from the disk cache (the checkout as ``{miles_root}``)."""
    root = str(miles_root.resolve())
    found = cache.cached(
        _cache_path(miles_root, model_type),
        lambda: {
            k: v.replace(root, "{miles_root}")
            for k, v in _record(miles_root, model_type, secrets, trust).items()
        },
    )
    return {str(k): str(v).replace("{miles_root}", root) for k, v in found.items()}


def _record(
    miles_root: Path, model_type: str | None, secrets: tuple[str, ...], trust: bool
) -> dict[str, str]:
    """Run the driver in the sandbox, each secret a stand-in, and read the runtime env it submits with."""
    done = sandbox.run(
        [sandbox.PYTHON, "-I", "-B", str(DRIVER), str(miles_root), model_type or ""],
        reads=[miles_root],
        cwd=miles_root,
        env={name: _STAND_IN.format(name) for name in secrets},
        limits=sandbox.Limits(wall_s=PROBE_TIMEOUT_S, cpu_s=math.ceil(PROBE_TIMEOUT_S) + CPU_HEADROOM_S),
        trust=trust,
        secret_names=secrets,
    )
    if done.timed_out:
        raise ConventionsError(
            f"it did not finish within {PROBE_TIMEOUT_S:g} s in the sandbox (does it wait for something?)"
        )
    try:
        found = documents.json_data(done.files["conventions.json"], sandbox.Limits().results)
    except (KeyError, ValueError):
        last = clipped((done.output.strip().splitlines() or [f"exit status {done.returncode}"])[-1], 200)
        raise ConventionsError(f"the sandbox's driver left no answer ({last})") from None
    if not isinstance(found, dict) or not isinstance(found.get("commands", []), list):
        raise ConventionsError("the sandbox's driver left an answer it did not write")
    if "error" in found:
        raise ConventionsError(clipped(str(found["error"]), 500))
    env = _submitted_env([str(c) for c in found["commands"]])
    home = str(found.get("home", "")).rstrip("/")
    return {name: _references(value, secrets, home) for name, value in env.items()}


def _submitted_env(commands: list[str]) -> dict[str, str]:
    """The ``env_vars`` of the one ``ray job submit`` command's ``--runtime-env-json``."""
    submits = [c for c in commands if "ray job submit" in c]
    if len(submits) != 1:
        raise ConventionsError(f"execute_train runs {len(submits)} `ray job submit` commands; expected one")
    try:
        words = shlex.split(submits[0])
        text = next(w for w in words if w.startswith(RUNTIME_ENV)).removeprefix(RUNTIME_ENV)
        env = documents.json_data(text, sandbox.Limits().results)["env_vars"]
    except (ValueError, StopIteration, KeyError, TypeError):
        raise ConventionsError("execute_train submits no runtime env run-matrix can read") from None
    if not isinstance(env, dict):
        raise ConventionsError("execute_train submits no runtime env run-matrix can read")
    return {str(name): str(value) for name, value in env.items()}


def _references(value: str, secrets: tuple[str, ...], home: str) -> str:
    """A stand-in secret as its ``${NAME}``, the sandbox's home as ``${HOME}`` (as the import writes them)."""
    for name in secrets:
        value = value.replace(_STAND_IN.format(name), f"${{{name}}}")
    return re.sub(re.escape(home) + r"(?=$|/|[\s'\"=:,;])", "${HOME}", value) if home else value


def _cache_path(miles_root: Path, model_type: str | None) -> Path:
    digest = hashlib.sha256(f"{CACHE_VERSION}\0{model_type or ''}\0".encode())
    digest.update(Tree.at(miles_root).digest([COMMAND_UTILS.as_posix()]).encode())
    for own in (DRIVER, MISSING):  # run-matrix's own side of the probe
        digest.update(hashlib.sha256(own.read_bytes()).digest())
    return cache.folder("launch") / f"{digest.hexdigest()}.json"
