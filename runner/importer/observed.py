"""observed: the launch conventions of a checkout, as its own ``execute_train`` applies them.

A probe of two lines calls the checkout's ``execute_train`` for one training backend in the
import sandbox, where the recorder runs none of its commands; the runtime env of the
``ray job submit`` it would run is what that checkout adds around a test's flags. Compared with
the shipped conventions, each difference is named (a ``launch`` warning) and the checkout's
value wins: ``--miles-root`` decides. The result is cached under the content hash of
``command_utils.py`` and of run-matrix's own side of it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from runner.errors import Location, RunMatrixError
from runner.importer import capture
from runner.importer.launch import launched
from runner.knowledge import cache
from runner.knowledge.checkout import Tree
from schemas import LaunchConventions
from schemas.conventions import EnvDefault

COMMAND_UTILS = Path("miles/utils/external_utils/command_utils.py")
CACHE_VERSION = "1"
PROBE_TIMEOUT_S = 15.0  # the recorder runs nothing: a probe that takes longer is stuck (or hostile)
PROBE = """\
import miles.utils.external_utils.command_utils as U
U.execute_train(train_args={train_args!r}, num_gpus_per_node=1, megatron_model_type={model_type!r})
"""


def checkout_conventions(
    miles_root: Path, shipped: LaunchConventions, model_type: str | None, trust: bool = False
) -> tuple[LaunchConventions, list[str]]:
    """The shipped conventions with the checkout's runtime env in place of theirs, and each
    difference in words (none: the shipped conventions hold for this checkout)."""
    miles_root = miles_root.resolve()
    backend = "megatron" if model_type else "fsdp"
    root = str(miles_root)
    observed, error = _observed_env(miles_root, model_type, tuple(shipped.secrets), trust)
    if error is not None:
        raise error
    env = dict(observed)
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


@functools.cache  # once a process: every cell of a render asks, and a stuck probe costs its timeout
def _observed_env(
    miles_root: Path, model_type: str | None, secrets: tuple[str, ...], trust: bool
) -> tuple[Mapping[str, str], RunMatrixError | None]:
    """The runtime env the checkout's execute_train submits with, less what the caller or a node
    probe would decide; or why it cannot be observed. A failed probe is not retried in this
    process: its error is the answer for every cell."""
    try:
        return MappingProxyType(_probe(miles_root, model_type, secrets, trust)), None
    except RunMatrixError as error:
        return MappingProxyType({}), error


def _probe(miles_root: Path, model_type: str | None, secrets: tuple[str, ...], trust: bool) -> dict[str, str]:
    """The env of the probe's submission, from the disk cache (the checkout as ``{miles_root}``)."""
    root = str(miles_root.resolve())
    train_args = "" if model_type else "--train-backend fsdp"
    probe = PROBE.format(train_args=train_args, model_type=model_type)
    found = cache.cached(
        _cache_path(miles_root, probe),
        lambda: {
            k: v.replace(root, "{miles_root}") for k, v in _record(miles_root, probe, secrets, trust).items()
        },
    )
    return {str(k): str(v).replace("{miles_root}", root) for k, v in found.items()}


def _record(miles_root: Path, probe: str, secrets: tuple[str, ...], trust: bool) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="run-matrix-probe-") as folder:
        os.chmod(folder, 0o755)  # the sandbox reads it as the unprivileged user nobody
        script = Path(folder) / "probe_execute_train.py"
        script.write_text(probe, encoding="utf-8")
        script.chmod(0o644)
        run = capture.record(script, {}, secrets, miles_root=miles_root, timeout=PROBE_TIMEOUT_S, trust=trust)
    call = run.calls[0]
    return launched(call.commands, call.args["train_args"], run.root, secrets, Location(script)).env


def _cache_path(miles_root: Path, probe: str) -> Path:
    digest = hashlib.sha256(f"{CACHE_VERSION}\0{probe}\0".encode())
    digest.update(Tree.at(miles_root).digest([COMMAND_UTILS.as_posix()]).encode())
    digest.update(hashlib.sha256(Path(capture.__file__).with_name("recorder.py").read_bytes()).digest())
    return cache.folder("launch") / f"{digest.hexdigest()}.json"
