"""write: put the imported files in place all together, or not at all.

Each file is written to a hidden name beside it and renamed over its place; if anything fails
on the way, the files already replaced get their old text back and new ones (and folders made
for them) are removed. An existing file is only replaced with ``--force``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from runner.errors import EnvironmentProblem, UsageError, display_path


def refuse_existing(paths: list[Path], force: bool) -> None:
    existing = [p for p in paths if p.exists()]
    if existing and not force:
        shown = ", ".join(display_path(p) for p in existing)
        raise UsageError(f"{shown} already exist{'s' if len(existing) == 1 else ''}; pass --force to replace")


def write_all(files: Mapping[Path, str], force: bool) -> None:
    refuse_existing(list(files), force)
    old = {path: path.read_text(encoding="utf-8") for path in files if path.exists()}
    made: list[Path] = []
    done: list[Path] = []
    try:
        for path, text in files.items():
            for folder in reversed(path.parents):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            hidden = path.with_name(f".{path.name}.writing")
            try:
                hidden.write_text(text, encoding="utf-8")
                os.replace(hidden, path)
            finally:
                hidden.unlink(missing_ok=True)
            done.append(path)
    except BaseException as exc:
        for path in done:
            if path in old:
                path.write_text(old[path], encoding="utf-8")
            else:
                path.unlink(missing_ok=True)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        if isinstance(exc, OSError):  # a folder that cannot be made, a read-only file system, ...
            raise EnvironmentProblem(f"cannot write {exc.filename or path}: {exc.strerror or exc}") from None
        raise
