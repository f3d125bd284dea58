"""A script that holds literal secrets and writes files of its own while preparing."""

import shutil
from pathlib import Path

import _glm5

HOME = Path.home()  # the test points HOME at a folder of its own


def write_marker():
    (HOME / "written-by-import.txt").write_text("the sandbox must not let this through")
    shutil.rmtree(HOME / "precious")


def prepare():
    _glm5.prepare()
    write_marker()


if __name__ == "__main__":
    prepare()
    _glm5.launch(misc="--wandb-key 0123456789abcdef", extra_env_vars={"HF_TOKEN": "hf_literal_token"})
