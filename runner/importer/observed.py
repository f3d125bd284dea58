"""observed: the launch conventions of a checkout, as its own ``execute_train`` applies them.

A probe of two lines calls the checkout's ``execute_train`` for one training backend in the
import sandbox, where the recorder runs none of its commands; the runtime env of the
``ray job submit`` it would run is what that checkout adds around a test's flags. Compared with
the shipped conventions, each difference is named (a ``launch`` warning) and the checkout's
value wins: ``--miles-root`` decides. The result is cached under the content hash of
``command_utils.py`` and of run-matrix's own side of it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from runner.errors import Location
from runner.importer import capture
from runner.importer.launch import launched
from runner.knowledge import cache
from schemas import LaunchConventions
from schemas.conventions import EnvDefault

COMMAND_UTILS = Path("miles/utils/external_utils/command_utils.py")
CACHE_VERSION = "1"
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
    env = _observed_env(miles_root, model_type, shipped.secrets, trust)
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
    miles_root: Path, model_type: str | None, secrets: list[str], trust: bool
) -> dict[str, str]:
    """The runtime env the checkout's execute_train submits with (the checkout written as
    ``{miles_root}`` in the cache), less what the caller or a node probe would decide."""
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


def _record(miles_root: Path, probe: str, secrets: list[str], trust: bool) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="run-matrix-probe-") as folder:
        os.chmod(folder, 0o755)  # the sandbox reads it as the unprivileged user nobody
        script = Path(folder) / "probe_execute_train.py"
        script.write_text(probe, encoding="utf-8")
        script.chmod(0o644)
        run = capture.record(script, {}, secrets, miles_root=miles_root, trust=trust)
    call = run.calls[0]
    return launched(call.commands, call.args["train_args"], run.root, secrets, Location(script)).env


def _cache_path(miles_root: Path, probe: str) -> Path:
    digest = hashlib.sha256(f"{CACHE_VERSION}\0{probe}\0".encode())
    for path in (miles_root / COMMAND_UTILS, Path(capture.__file__).with_name("recorder.py")):
        if path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return cache.folder("launch") / f"{digest.hexdigest()}.json"
