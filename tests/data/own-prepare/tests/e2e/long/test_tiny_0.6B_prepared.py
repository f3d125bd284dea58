"""A test that prepares its node with a function of its own, called by a prepare step of kind call."""

import os
from pathlib import Path


def prepare(path, text="prepared"):
    """Writes ``text`` and the folder it runs from to ``path``."""
    Path(path).write_text(f"{text} in {Path.cwd()}\n")


def refuse():
    print("making the venv")
    raise RuntimeError("uv venv failed: no python3.11")


def refuse_login():
    raise PermissionError(f"hf refused the token {os.environ['HF_TOKEN']}")


if __name__ == "__main__":
    raise SystemExit("the __main__ block ran")
