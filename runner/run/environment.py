"""The job's environment at run time: probes decided here, secrets from the caller, never shown.

A launch holds ``${NAME}`` references where a value is decided at run time: probes
(``NCCL_NVLS_ENABLE``) run here with bash, on the node run-matrix runs on; secrets
(``WANDB_API_KEY``) come from the caller's environment into the job's runtime env and go
nowhere else: every line run-matrix writes passes through ``runner.redact.Redactor``.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping, Sequence

from runner.errors import EnvironmentProblem
from runner.launch import shell
from runner.launch.planned import Planned

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def probe(probes: Mapping[str, str], caller_env: Mapping[str, str]) -> dict[str, str]:
    """The value of each probed variable: the caller's when set, else what its probe prints."""
    values = {}
    for name, command in probes.items():
        if name in caller_env:
            values[name] = caller_env[name]
            continue
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EnvironmentProblem(f"the probe for {name} failed ({command}): {done.stderr.strip()}")
        values[name] = done.stdout.strip()
    return values


def undecided(probes: Mapping[str, str], caller_env: Mapping[str, str]) -> dict[str, str]:
    """What a dry run knows of each probed variable without running its probe: the caller's value when
    set, else its ``${NAME}`` reference (decided when the job is submitted)."""
    return {name: caller_env.get(name, f"${{{name}}}") for name in probes}


def job_env(planned: Planned, probed: Mapping[str, str], caller_env: Mapping[str, str]) -> dict[str, str]:
    """The runtime env vars the job gets: the launch's, references filled in, plus the secrets
    the train job's entrypoint refers to (its shell expands them on the node) and those in the verify
    jobs' arguments (the verify program fills them from this env)."""
    known = {**caller_env, **probed}
    env = {name: fill(value, known, f"env.{name}") for name, value in planned.launch.env.items()}
    texts = [(token, "the job's command line") for token in planned.entry_argv]
    texts += [(json.dumps(c.args), f"verify.{n}.args") for n, c in planned.cell.spec.verify.items()]
    for text, where in texts:
        for name in shell.references(text):
            if name not in env:
                env[name] = fill(f"${{{name}}}", known, where)
    return env


def fill(value: str, known: Mapping[str, str], where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise EnvironmentProblem(f"{where} refers to ${{{name}}}, which is not set: export {name}")
        return known[name]

    return _REFERENCE.sub(one, value)


def entrypoint(argv: Sequence[str]) -> str:
    """A job's entrypoint: a shell line whose ``${NAME}`` references bash expands on the node."""
    return shell.line(argv)
