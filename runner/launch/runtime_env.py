"""runtime_env: the environment miles' launch gives the job, as the launch conventions say.

Its own module, apart from :mod:`runner.launch.render`, because rule M15 reads it for every cell that
``validate`` checks, which needs none of the rest of a launch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.cells.cell import Cell
from runner.redact import secret_name
from schemas.conventions import EnvDefault

MILES_ROOT_REFERENCE = "${MILES_ROOT}"


def runtime_env(
    cell: Cell, caller_env: Mapping[str, str], miles_root: str = MILES_ROOT_REFERENCE
) -> tuple[dict[str, str], dict[str, str]]:
    """miles' default env vars in miles' order, then the test's own (a path list merged with them)."""
    conventions = cell.conventions
    fill = {
        "master_addr": cell.spec.launch.master_addr,
        "megatron_path": cell.spec.launch.megatron_path or conventions.megatron_path,
        "miles_root": miles_root,
    }
    env: dict[str, str] = {}
    probes: dict[str, str] = {}
    lists: list[EnvDefault] = []
    backend = cell.flag("train-backend", "megatron")
    for default in conventions.runtime_env:
        if default.backend not in (None, backend):
            continue
        if default.path_list:
            lists.append(default)
        elif default.from_caller and default.name in caller_env:
            env[default.name] = _secret_safe(default.name, caller_env[default.name], conventions.secrets)
        elif default.probe and default.on_rocm is not None and cell.profile.platform == "rocm":
            env[default.name] = default.on_rocm  # what the probe prints there: no nvidia-smi on an AMD node
        elif default.probe:
            env[default.name] = f"${{{default.name}}}"
            probes[default.name] = conventions.probes[default.probe]
        elif default.value is not None:
            env[default.name] = default.value.format(**fill)
    env.update(
        {name: value.replace(MILES_ROOT_REFERENCE, miles_root) for name, value in cell.spec.env.items()}
    )
    for default in lists:  # as miles assigns it last: in the test's place if it set one, else at the end
        parts = [
            (default.value or "").format(**fill),
            env.get(default.name, ""),
            caller_env.get(default.name, ""),
        ]
        env[default.name] = ":".join(dict.fromkeys(p for part in parts for p in part.split(":") if p))
    return env, probes


def _secret_safe(name: str, value: str, secrets: Sequence[str]) -> str:
    return f"${{{name}}}" if secret_name(name, secrets) else value
