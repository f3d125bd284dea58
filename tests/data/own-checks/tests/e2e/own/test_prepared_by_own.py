"""Prepares the node in a function of its own with what no prepare step runs (a virtual environment,
a clone, a tool run from a shell), then launches: the spec calls prepare() as a step of kind call."""

import shutil
from pathlib import Path

import miles.utils.external_utils.command_utils as U
from tests.e2e.own._launch import launch

ENVIRONMENT = Path("/tmp/own-env")


def prepare(venv: Path, depth: int = 1) -> None:
    U.exec_command(f"mkdir -p {venv}")
    U.exec_command(f"uv venv --clear {venv}")
    U.exec_command(f"git clone --depth {depth} https://example.invalid/env.git /tmp/own-env-src")
    shutil.copytree("/tmp/own-env-src/environments/tiny", ENVIRONMENT / "tiny", dirs_exist_ok=True)
    U.exec_command(f'cd {ENVIRONMENT} && "$(uv tool dir --bin)/tool" install tiny')


if __name__ == "__main__":
    U.exec_command("mkdir -p /root/datasets")
    prepare(ENVIRONMENT / "venv", depth=2)
    launch(f" --dump-details {ENVIRONMENT}/dumps")
