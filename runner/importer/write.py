"""write: put the imported files in place all together, or not at all (``runner.atomic``). An
existing file is only replaced with ``--force``."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from runner import atomic


def refuse_existing(paths: list[Path], force: bool) -> None:
    atomic.refuse_existing(paths, force, "pass --force to replace")


def write_all(files: Mapping[Path, str], force: bool, named: Collection[Path] = ()) -> None:
    """Every file or none. A link where one goes is refused (exit 3); ``--force`` replaces one only at
    a path the user ``named`` (``-o spec.yaml``), never in a folder run-matrix fills (components)."""
    refuse_existing(list(files), force)
    for path in files:
        if path not in named:
            atomic.refuse_link(path)
    atomic.write_all(files, replace_link=force)
